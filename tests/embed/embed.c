// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * embed-host: a C program embedding libpython3.X.so, the target of
 * tests/integration/test_embed.py. Its executable holds no _PyRuntime: the
 * profiler must find the interpreter in the mapped shared library.
 *
 *   embed-host [--seconds N]     spin in Python for about N seconds
 *   embed-host --print-source    write the embedded Python code and exit
 *
 * It prints "pid=N" on stderr first (the harness waits for that line), then
 * calls host_work() from C again and again, each call one C-to-Python
 * transition, until N seconds have passed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* co_filename of the embedded code: the profile shows it as the frames' file */
#define APP_FILENAME	"embedded_app.py"
/* Each call from C spins this long at most, so there are many calls. */
#define SLICE_SECONDS	0.25

/*
 * The Python side. Line numbers matter: the test reads this text back
 * (--print-source) and expects host_work at its call of inner_loop() and
 * inner_loop in its while loop. Single quotes only, no escapes but \n.
 */
static const char app_source[] =
	"import time\n"
	"\n"
	"\n"
	"def inner_loop(deadline):\n"
	"    n = 0\n"
	"    while time.monotonic() < deadline:\n"
	"        n += 1\n"
	"    return n\n"
	"\n"
	"\n"
	"def host_work(seconds):\n"
	"    deadline = time.monotonic() + seconds\n"
	"    return inner_loop(deadline)\n";

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: embed-host [--seconds N] | --print-source\n");
}

/* Parses argv; 0 to go on, 1 to exit with success, -1 on a bad argument. */
static int parse_args(int argc, char **argv, double *seconds)
{
	char *end;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--print-source")) {
			fputs(app_source, stdout);
			return 1;
		}
		if (!strcmp(argv[i], "--help")) {
			usage(stdout);
			return 1;
		}
		if (strcmp(argv[i], "--seconds") || i + 1 >= argc) {
			usage(stderr);
			return -1;
		}
		errno = 0;
		*seconds = strtod(argv[++i], &end);
		if (errno || end == argv[i] || *end || *seconds < 0) {
			fprintf(stderr, "embed-host: bad --seconds: %s\n",
				argv[i]);
			return -1;
		}
	}
	return 0;
}

/* Python with the host's argv as sys.argv, not parsed as Python's options. */
static int start_python(int argc, char **argv)
{
	PyConfig config;
	PyStatus status;

	PyConfig_InitIsolatedConfig(&config);
	status = PyConfig_SetBytesString(&config, &config.program_name,
					 argv[0]);
	if (PyStatus_Exception(status))
		goto fail;
	config.parse_argv = 0;
	status = PyConfig_SetBytesArgv(&config, argc, argv);
	if (PyStatus_Exception(status))
		goto fail;
	status = Py_InitializeFromConfig(&config);
	if (PyStatus_Exception(status))
		goto fail;
	PyConfig_Clear(&config);
	return 0;
fail:
	PyConfig_Clear(&config);
	if (PyStatus_IsExit(status))
		exit(status.exitcode);
	Py_ExitStatusException(status);
	return -1;
}

/* Runs app_source as module __main__; a new reference to its host_work. */
static PyObject *load_app(void)
{
	PyObject *code, *main_mod, *globals, *res, *fn;

	code = Py_CompileString(app_source, APP_FILENAME, Py_file_input);
	if (!code)
		return NULL;
	main_mod = PyImport_AddModule("__main__");	/* borrowed */
	if (!main_mod) {
		Py_DECREF(code);
		return NULL;
	}
	globals = PyModule_GetDict(main_mod);		/* borrowed */
	res = PyEval_EvalCode(code, globals, globals);
	Py_DECREF(code);
	if (!res)
		return NULL;
	Py_DECREF(res);
	fn = PyDict_GetItemString(globals, "host_work");	/* borrowed */
	if (!fn || !PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_RuntimeError, "no callable host_work");
		return NULL;
	}
	Py_INCREF(fn);
	return fn;
}

/* host_work(slice) from C until the deadline; the number of calls, or -1. */
static long call_until(PyObject *fn, double seconds)
{
	double deadline = now_seconds() + seconds, left, slice;
	PyObject *args, *res;
	long calls = 0;

	while ((left = deadline - now_seconds()) > 0) {
		slice = left < SLICE_SECONDS ? left : SLICE_SECONDS;
		args = Py_BuildValue("(d)", slice);
		if (!args)
			return -1;
		res = PyObject_CallObject(fn, args);
		Py_DECREF(args);
		if (!res)
			return -1;
		Py_DECREF(res);
		calls++;
	}
	return calls;
}

int main(int argc, char **argv)
{
	double seconds = 5.0;
	PyObject *fn;
	long calls;
	int r;

	r = parse_args(argc, argv, &seconds);
	if (r)
		return r > 0 ? 0 : 2;
	if (start_python(argc, argv))
		return 1;
	/* the harness attaches once it reads this line: Python is up by now */
	fprintf(stderr, "pid=%d\n", (int)getpid());
	fflush(stderr);

	fn = load_app();
	calls = fn ? call_until(fn, seconds) : -1;
	Py_XDECREF(fn);
	if (calls < 0)
		PyErr_Print();
	else
		fprintf(stderr, "host_work called %ld times\n", calls);
	if (Py_FinalizeEx() < 0)
		return 120;
	return calls < 0 ? 1 : 0;
}
