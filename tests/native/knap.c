// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A C extension for the --native tests: solve() calls knap_solve_outer(),
 * which spends a known share of its time in each of two inner functions:
 * knap_inner_fill runs FILL_UNITS units of work per round, knap_inner_scan
 * SCAN_UNITS, the same loop body each, so the split is 1:3. Every function
 * but PyInit_knap is static (named by .symtab only), none is inlined or
 * cloned (noipa), and
 * the test builds it with -fomit-frame-pointer: only .eh_frame unwinds it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define FILL_UNITS	1
#define SCAN_UNITS	3

static volatile unsigned long sink;

/* n rounds of a linear congruential step: the same loop inlined in each
 * inner function, so that samples land in the function itself */
#define SPIN(x, n)							\
	do {								\
		for (unsigned long i_ = 0; i_ < (n); i_++)		\
			(x) = (x) * 6364136223846793005ul + 1442695040888963407ul; \
	} while (0)

static __attribute__((noipa)) unsigned long knap_inner_fill(unsigned long x, unsigned long n)
{
	SPIN(x, n * FILL_UNITS);
	sink = x;
	return x;
}

static __attribute__((noipa)) unsigned long knap_inner_scan(unsigned long x, unsigned long n)
{
	SPIN(x, n * SCAN_UNITS);
	sink = x;
	return x;
}

static __attribute__((noipa)) unsigned long knap_solve_outer(unsigned long rounds)
{
	unsigned long x = 1, r;

	for (r = 0; r < rounds; r++) {
		x = knap_inner_fill(x, 100000);
		x = knap_inner_scan(x, 100000);
	}
	return x;
}

static PyObject *solve(PyObject *self, PyObject *arg)
{
	unsigned long rounds = PyLong_AsUnsignedLong(arg);

	(void)self;
	if (PyErr_Occurred())
		return NULL;
	return PyLong_FromUnsignedLong(knap_solve_outer(rounds));
}

/* work in a function of its own: what the diff test's second recording adds */
static __attribute__((noipa)) unsigned long knap_extra_pass(unsigned long x, unsigned long n)
{
	SPIN(x, n);
	sink = x;
	return x;
}

static PyObject *extra(PyObject *self, PyObject *arg)
{
	unsigned long rounds = PyLong_AsUnsignedLong(arg);

	(void)self;
	if (PyErr_Occurred())
		return NULL;
	return PyLong_FromUnsignedLong(knap_extra_pass(1, 100000 * rounds));
}

static PyMethodDef methods[] = {
	{ "solve", solve, METH_O, "Runs knap_solve_outer for ROUNDS rounds." },
	{ "extra", extra, METH_O, "Runs knap_extra_pass for ROUNDS rounds." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = { PyModuleDef_HEAD_INIT, "knap", NULL, -1, methods };

PyMODINIT_FUNC PyInit_knap(void)
{
	return PyModule_Create(&module);
}
