// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ebpfprof record (the default subcommand): sample a running CPython
 * process's Python stacks in the kernel and write a profile. This file parses
 * the recording's options and drives one recording; each concern lives in its
 * own file.
 */
#define _GNU_SOURCE
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "commands.h"
#include "controller.h"
#include "frame_names.h"
#include "grow.h"
#include "history.h"
#include "label_options.h"
#include "launch.h"
#include "match.h"
#include "multi.h"
#include "parse_num.h"
#include "preflight.h"
#include "printable.h"
#include "progress.h"
#include "pusher.h"
#include "py_target.h"
#include "recorder.h"
#include "report.h"
#include "rotate.h"
#include "states.h"
#include "stop_signal.h"
#include "sudo_user.h"
#include "target_pick.h"
#include "writer.h"

#define ERRLEN 512
#define MULTI_DEFAULT_TEXT	SESSION_QUOTE(MULTI_DEFAULT_PROCESSES)
#define MULTI_MAX_TEXT		SESSION_QUOTE(MULTI_MAX_PROCESSES)
/* keys of long options without a short form */
#define OPT_AS_ROOT 0x100
/* How long a launched command may take to start its interpreter. */
#define PYTHON_START_TIMEOUT_NS (10ull * 1000000000ull)

struct options {
	pid_t pid;
	pid_t *pids;		/* --pid A,B,...: several targets */
	size_t npids;
	const char *match;	/* --match REGEX */
	double duration;	/* seconds; 0: until Ctrl-C or the target exits */
	unsigned rate_hz;
	const char *output;
	const struct output_writer *writer;
	int gil_only;
	int idle;
	const char *gc_log;
	const char *history;	/* --history SERIES: the run stored at the end */
	const char *history_db;
	const char *tags[HIST_MAX_TAGS];
	size_t ntags;
	double wait_threshold_ms;
	double gc_min_ms;	/* chrome: shortest GC pause drawn as a slice */
	int by_function;
	int subprocesses;
	int as_root;		/* launch mode under sudo: keep root for the command */
	int threads;		/* -t: collapsed stacks under their thread */
	int native;		/* -n: native frames */
	struct label_options label;	/* --label, --dask */
	int tasks;		/* --tasks */
	const char *group_by;	/* --group-by NAME */
	unsigned native_stack_kib;	/* --native-stack; 0: the default */
	struct frame_naming naming;
	double rotate;		/* seconds per period; 0: one profile */
	unsigned keep;		/* periods kept; 0: all */
	struct push_config push;	/* --push: .url set */
	int verbose;
	char **command;		/* launch mode */
	int dashdash;		/* argv index of "--"; 0: none */
	unsigned max_processes;	/* --max-processes; 0: the default */
};

/* --rotate: SIGUSR1 asks for the current period to be written now */
static volatile sig_atomic_t cut_requested;

enum { OPT_ROTATE = 0x101, OPT_KEEP, OPT_NATIVE_STACK, OPT_LIST_STATES, OPT_HISTORY,
       OPT_HISTORY_DB, OPT_TAG, OPT_PUSH, OPT_APP, OPT_SPOOL, OPT_SPOOL_MAX_MB,
       OPT_PUSH_BASIC_AUTH_FILE, OPT_PUSH_TOKEN_FILE, OPT_PUSH_CA_FILE,
       OPT_PUSH_TENANT, OPT_GROUP_BY, OPT_MAX_PROCESSES, OPT_TASKS };

static const char doc[] =
	"Sample a CPython process's stacks in the kernel (eBPF) and write a profile.\n\n"
	"Subcommands: record (the default, these options), diff, dump, top; "
	"'ebpfprof SUBCOMMAND --help' describes each.\v"
	"Examples:\n"
	"  sudo ebpfprof --pid 4242                 record until Ctrl-C or the target exits\n"
	"  sudo ebpfprof -d 30 -o app.speedscope.json --pid 4242\n"
	"  sudo ebpfprof -- python3 app.py ARGS     launch a command and record it\n"
	"  sudo ebpfprof --match 'dask.worker' -d 60 -o profiles/\n"
	"                                           every matching process, one profile each\n"
	"\nOpen the .speedscope.json file at https://www.speedscope.app or with the "
	"speedscope CLI. Needs CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE (root).";

static const struct argp_option option_list[] = {
	{ "pid", 'p', "PID[,PID...]", 0, "Profile the running process PID (several: one profile each in the --output directory)", 0 },
	{ "match", 'm', "REGEX", 0, "Profile every CPython process whose command line matches REGEX, running now or started later (one profile each in the --output directory)", 0 },
	{ "max-processes", OPT_MAX_PROCESSES, "N", 0, "With --match or --pid A,B: record at most N processes at once (default " MULTI_DEFAULT_TEXT ", at most " MULTI_MAX_TEXT "); further matches wait their turn", 0 },
	{ "duration", 'd', "SECONDS", 0, "Stop after SECONDS (default: until Ctrl-C or the target exits)", 0 },
	CONTROLLER_RATE_OPTION,
	{ "output", 'o', "FILE", 0, "Write the profile to FILE (default: ebpfprof-PID-TIME.speedscope.json)", 0 },
	{ "format", 'f', "FORMAT", 0, "speedscope (default), collapsed, chrome or pprof", 0 },
	{ "gil", 'g', NULL, 0, "Keep only samples of the thread holding the GIL", 0 },
	{ "idle", 'i', NULL, 0, "Add off-CPU time (GIL, lock, I/O waits, sleep, preemption) as samples weighted by its duration", 0 },
	{ "gc-log", 'G', "FILE", 0, "Write every GC pause and every long wait to FILE as JSON lines", 0 },
	{ "history", OPT_HISTORY, "SERIES", 0, "Store the recording's figures as a run of SERIES in the run history (see ebpfprof history)", 0 },
	{ "history-db", OPT_HISTORY_DB, "PATH", 0, "The run history's database (default: ~/.local/share/ebpfprof/history.db of the user who ran ebpfprof)", 0 },
	{ "tag", OPT_TAG, "KEY=VALUE", 0, "--history: a tag of the run (a commit, gc-off); --push: a label of every profile pushed; repeatable", 0 },
	{ "wait-threshold", 'W', "MS", 0, "Shortest wait written to --gc-log (default 10 ms)", 0 },
	{ "gc-min-ms", 'M', "MS", 0, "Chrome trace: draw GC pauses of at least MS as slices (default 0: every pause)", 0 },
	{ "function", 'F', NULL, 0, "One frame per function instead of per line", 0 },
	{ "rotate", OPT_ROTATE, "SECONDS", 0, "Continuous mode: write one profile (and GC log) per period of SECONDS, named with its start time; SIGUSR1 writes the current period at once", 0 },
	{ "keep", OPT_KEEP, "N", 0, "With --rotate: keep the newest N periods' files, delete older ones", 0 },
	{ "push", OPT_PUSH, "URL", 0, "With --rotate: push each period's profile of each process to the Grafana Pyroscope server at URL (POST URL/ingest, pprof); files are then written only with -o", 0 },
	{ "app", OPT_APP, "NAME", 0, "--push: the service name (default: each process's name)", 0 },
	{ "spool", OPT_SPOOL, "DIR", 0, "--push: keep the periods not sent yet in DIR (default: a temporary directory)", 0 },
	{ "spool-max-mb", OPT_SPOOL_MAX_MB, "MB", 0, "--push: the spool's bound; the oldest periods are dropped beyond it (default 64)", 0 },
	{ "push-basic-auth-file", OPT_PUSH_BASIC_AUTH_FILE, "FILE", 0, "--push: basic auth, USER:PASSWORD read from FILE (not readable by others)", 0 },
	{ "push-token-file", OPT_PUSH_TOKEN_FILE, "FILE", 0, "--push: a bearer token read from FILE (not readable by others)", 0 },
	{ "push-tenant", OPT_PUSH_TENANT, "ID", 0, "--push: the tenant (X-Scope-OrgID header) of a multi-tenant Pyroscope", 0 },
	{ "push-ca-file", OPT_PUSH_CA_FILE, "FILE", 0, "--push: trust the CA certificates in FILE (PEM) for https instead of the system's", 0 },
	{ "subprocesses", 's', NULL, 0, "Also profile Python child processes started during the recording (one profile per process and thread)", 0 },
	{ "as-root", OPT_AS_ROOT, NULL, 0, "Under sudo, run the launched command as root (default: as the user who ran sudo, with their groups and HOME)", 0 },
	{ "threads", 't', NULL, 0, "collapsed: start each stack with its thread (id and name)", 0 },
	FRAME_NAMING_OPTIONS,
	{ "label", LABEL_OPT_LABEL, "NAME=FUNCTION:ARGUMENT", 0, "Label every sample and wait whose stack holds a frame of FUNCTION (qualified or plain name) with the value of its argument number ARGUMENT (from 0): a str, an int or a tuple of them; time per value in the summary and the recording (repeatable, at most 4)", 0 },
	{ "dask", LABEL_OPT_DASK, NULL, 0, "Dask workers: label dask_key (the task's key, from distributed's task runner) and dask_prefix (its key_split)", 0 },
	{ "tasks", OPT_TASKS, NULL, 0, "asyncio (3.11+): a profile per process, \"[asyncio tasks] <process> (pid N)\", of where its tasks stay suspended and what they await, in task-seconds (the tasks walked about once a second)", 0 },
	{ "group-by", OPT_GROUP_BY, "NAME", 0, "speedscope: one profile per value of label NAME (--label, or --dask's dask_key and dask_prefix) instead of one per thread", 0 },
	{ "native", 'n', NULL, 0, "Native (C/C++) frames woven into the Python stacks: each C call of the eval loop replaced by the Python frames it ran", 0 },
	{ "native-stack", OPT_NATIVE_STACK, "KIB", 0, "With --native: KiB of each sample's stack copied and unwound (4 to 32, default 16): the depth native frames reach", 0 },
	{ "verbose", 'v', NULL, 0, "Say more, including libbpf's messages", 0 },
	{ "version", 'V', NULL, 0, "Print the version and exit", -1 },
	{ "list-states", OPT_LIST_STATES, NULL, 0, "Print the states a thread's time is split into (a recording's states_s keys), one a line, and exit", -1 },
	{ NULL, 0, NULL, 0, NULL, 0 },
};

/* Longest -d: a year (the deadline is kept in nanoseconds). */
#define DURATION_MAX_S		(365.0 * 24 * 3600)
/* Largest -W: a day. */
#define THRESHOLD_MAX_MS	(24.0 * 3600 * 1000)

static void die(const char *msg);

/* The index of a "--" argument in argv (a command to launch follows it), or 0. */
static int find_dashdash(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--"))
			return i;
	return 0;
}

/* --push's options: with --rotate, each only with --push, tags as labels. */
static void check_push_options(struct argp_state *state, struct options *o)
{
	struct push_config *pc = &o->push;

	if (!pc->url) {
		if (pc->app || pc->spool_dir || pc->spool_max_bytes || pc->basic_auth_file ||
		    pc->token_file || pc->ca_file || pc->tenant)
			argp_error(state, "--app, --spool, --spool-max-mb and --push-* options need --push URL");
		return;
	}
	if (!o->rotate)
		argp_error(state, "--push needs --rotate SECONDS (a profile is pushed per period)");
	if (pc->basic_auth_file && pc->token_file)
		argp_error(state, "give --push-basic-auth-file or --push-token-file, not both");
	for (size_t i = 0; i < o->ntags; i++) {
		const char *why = push_tag_invalid(o->tags[i]);

		if (why)
			argp_error(state, "%s: %s", why, o->tags[i]);
	}
	pc->tags = o->tags;
	pc->ntags = o->ntags;
	pc->rate_hz = o->rate_hz;
	pc->verbose = o->verbose;
	if (!pc->spool_max_bytes)
		pc->spool_max_bytes = (uint64_t)PUSH_SPOOL_DEFAULT_MB << 20;
}

/* What to profile: --pid, --match, or a command after --. */
static error_t parse_target_option(int key, char *arg, struct argp_state *state)
{
	struct options *o = state->input;

	switch (key) {
	case 'p':
		if (o->pids || o->pid)
			argp_error(state, "give --pid once, with a comma-separated list");
		if (parse_pid_list(arg, &o->pids, &o->npids))
			argp_error(state, "invalid pid list: %s (PID or PID,PID,... each once)", arg);
		if (o->npids == 1) {
			o->pid = o->pids[0];
			free(o->pids);
			o->pids = NULL;
			o->npids = 0;
		}
		break;
	case 'm': {
		char err[ERRLEN];

		if (matcher_valid(arg, err, sizeof(err)))
			argp_error(state, "%s", err);
		o->match = arg;
		break;
	}
	case ARGP_KEY_ARG:
		/* a command to launch only ever comes after "--", so that a
		 * mistyped subcommand is never run as a program */
		if (!o->dashdash || state->next - 1 <= o->dashdash)
			argp_error(state, "unexpected argument '%s' (a command to launch goes after --)", arg);
		o->command = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* How long, and what is written where. */
static error_t parse_output_option(int key, char *arg, struct argp_state *state)
{
	struct options *o = state->input;
	unsigned long v;

	switch (key) {
	case 'd':
		if (parse_real(arg, 0, 1, DURATION_MAX_S, &o->duration))
			argp_error(state, "invalid duration: %s (seconds, > 0, at most a year)", arg);
		break;
	case 'o':
		if (!arg[0])
			argp_error(state, "invalid output: an empty file name");
		o->output = arg;
		break;
	case 'f':
		o->writer = writer_by_name(arg);
		if (!o->writer)
			argp_error(state, "unknown format: %s (speedscope, collapsed, chrome or pprof)", arg);
		break;
	case 'G':
		if (!arg[0])
			argp_error(state, "invalid --gc-log: an empty file name");
		o->gc_log = arg;
		break;
	case 'W':
		if (parse_real(arg, 0, 0, THRESHOLD_MAX_MS, &o->wait_threshold_ms))
			argp_error(state, "invalid wait threshold: %s (milliseconds, 0 to a day)", arg);
		break;
	case 'M':
		if (parse_real(arg, 0, 0, THRESHOLD_MAX_MS, &o->gc_min_ms))
			argp_error(state, "invalid --gc-min-ms: %s (milliseconds, 0 to a day)", arg);
		break;
	case OPT_GROUP_BY:
		o->group_by = arg;
		break;
	case OPT_NATIVE_STACK:
		if (parse_ulong(arg, 4, CONTROLLER_NATIVE_STACK_MAX_KIB, &v))
			argp_error(state, "invalid --native-stack: %s (KiB, 4 to %u)", arg,
				   CONTROLLER_NATIVE_STACK_MAX_KIB);
		o->native_stack_kib = v;
		break;
	case OPT_MAX_PROCESSES:
		if (parse_ulong(arg, 1, MULTI_MAX_PROCESSES, &v))
			argp_error(state, "invalid --max-processes: %s (1 to %d)", arg, MULTI_MAX_PROCESSES);
		o->max_processes = v;
		break;
	case OPT_ROTATE:
		if (parse_real(arg, 0.1, 0, 1e7, &o->rotate))
			argp_error(state, "invalid rotation period: %s (seconds, at least 0.1)", arg);
		break;
	case OPT_KEEP:
		if (parse_ulong(arg, 1, 1000000, &v))
			argp_error(state, "invalid --keep: %s (a number of periods, at least 1)", arg);
		o->keep = v;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The switches without an argument, and --version, --list-states. */
static error_t parse_flag_option(int key, char *arg, struct argp_state *state)
{
	struct options *o = state->input;

	(void)arg;
	switch (key) {
	case 'g':
		o->gil_only = 1;
		break;
	case 'F':
		o->by_function = 1;
		break;
	case 's':
		o->subprocesses = 1;
		break;
	case 'i':
		o->idle = 1;
		break;
	case OPT_AS_ROOT:
		o->as_root = 1;
		break;
	case 't':
		o->threads = 1;
		break;
	case 'n':
		o->native = 1;
		break;
	case OPT_TASKS:
		o->tasks = 1;
		break;
	case 'v':
		o->verbose = 1;
		break;
	case 'V':
		printf("ebpfprof %s\n", EP_VERSION);
		exit(0);
	case OPT_LIST_STATES:
		for (int s = 0; s < STATE_RECORDED; s++)
			printf("%s\n", sample_state_name(s));
		exit(0);
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Where else a recording goes: --history and --push. */
static error_t parse_store_option(int key, char *arg, struct argp_state *state)
{
	struct options *o = state->input;
	const char *why;

	switch (key) {
	case OPT_HISTORY:
		if (!arg[0])
			argp_error(state, "invalid --history: an empty series name");
		o->history = arg;
		break;
	case OPT_HISTORY_DB:
		o->history_db = arg;
		break;
	case OPT_TAG:
		why = hist_tag_take(o->tags, &o->ntags, arg);
		if (why)
			argp_error(state, "%s: %s", why, arg);
		break;
	case OPT_PUSH:
		o->push.url = arg;
		break;
	case OPT_APP:
		if (!arg[0] || strlen(arg) > PUSH_LABEL_VALUE_MAX)
			argp_error(state, "invalid --app: %s (1 to %d characters)", arg, PUSH_LABEL_VALUE_MAX);
		o->push.app = arg;
		break;
	case OPT_SPOOL:
		if (!arg[0])
			argp_error(state, "invalid --spool: an empty directory name");
		o->push.spool_dir = arg;
		break;
	case OPT_SPOOL_MAX_MB:
	{
		double mb;

		/* fractions too: a bound of a few periods, for tests */
		if (parse_real(arg, 0.001, 0, 1024 * 1024, &mb))
			argp_error(state, "invalid --spool-max-mb: %s (MB, 0.001 to 1048576)", arg);
		o->push.spool_max_bytes = (uint64_t)(mb * 1048576);
		break;
	}
	case OPT_PUSH_BASIC_AUTH_FILE:
		o->push.basic_auth_file = arg;
		break;
	case OPT_PUSH_TOKEN_FILE:
		o->push.token_file = arg;
		break;
	case OPT_PUSH_CA_FILE:
		o->push.ca_file = arg;
		break;
	case OPT_PUSH_TENANT:
		if (!push_tenant_valid(arg))
			argp_error(state, "invalid --push-tenant: %s (1 to 150 of letters, digits and !-_.*'())", arg);
		o->push.tenant = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The options together, once all are read. */
static void check_options(struct argp_state *state, struct options *o)
{
	if (!o->pid && !o->pids && !o->match && !o->command)
		argp_error(state, "nothing to profile: give --pid PID, --match REGEX or -- COMMAND");
	if (!!(o->pid || o->pids) + !!o->match + !!o->command > 1)
		argp_error(state, "give either --pid, --match or a command, not both");
	if (o->keep && !o->rotate)
		argp_error(state, "--keep needs --rotate");
	label_options_finish(&o->label);
	if (o->max_processes && !o->pids && !o->match)
		argp_error(state, "--max-processes needs --match or --pid A,B,...");
	if (o->group_by && !label_options_named(&o->label, o->group_by))
		argp_error(state, "--group-by %s: no label of that name (give --label %s=FUNCTION:ARG, or --dask for dask_key and dask_prefix)",
			   o->group_by, o->group_by);
	if (o->group_by && o->writer != &speedscope_writer)
		argp_error(state, "--group-by needs the speedscope format");
	if (o->history_db && !o->history)
		argp_error(state, "--history-db needs --history SERIES");
	if (o->ntags && !o->history && !o->push.url)
		argp_error(state, "--tag needs --history SERIES or --push URL");
	check_push_options(state, o);
}

static error_t parse_option(int key, char *arg, struct argp_state *state)
{
	struct options *o = state->input;
	error_t (*const groups[])(int, char *, struct argp_state *) = {
		parse_target_option, parse_output_option, parse_flag_option, parse_store_option,
	};
	size_t i;

	if (frame_naming_option(key, &o->naming) ||
	    controller_rate_option(key, arg, state, &o->rate_hz) != ARGP_ERR_UNKNOWN ||
	    label_options_parse(key, arg, state, &o->label) != ARGP_ERR_UNKNOWN)
		return 0;
	if (key == ARGP_KEY_END) {
		check_options(state, o);
		return 0;
	}
	for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (groups[i](key, arg, state) != ARGP_ERR_UNKNOWN)
			return 0;
	return ARGP_ERR_UNKNOWN;
}

/* Messages carry names from the target (comm, paths): escaped for the terminal. */
static void die(const char *msg)
{
	char shown[ERRLEN * 4];

	fprintf(stderr, "ebpfprof: %s\n", printable(msg, shown, sizeof(shown)));
	exit(1);
}

static void default_output(struct options *o, pid_t pid, char *buf, size_t len)
{
	time_t now = time(NULL);
	char stamp[32];

	strftime(stamp, sizeof(stamp), "-%Y%m%d-%H%M%S", localtime(&now));
	/* --rotate: each period's name gets its own start time */
	snprintf(buf, len, "ebpfprof-%d%s%s", pid, o->rotate ? "" : stamp, o->writer->suffix);
}

/* One process's recording and outputs: the only one (--pid PID, a
 * command), or one of several (--pid A,B, --match: a member of the group). */
struct run {
	struct options *o;
	pid_t pid;
	int is_child;
	int pidfd;
	int exit_status;
	int several;		/* one of several: a failed write fails only it */
	int failed;		/* ... and one did */
	struct controller ctl;	/* the only one's */
	struct py_target found;	/* the only one's target */
	/* the recording: the controller's, or the group member's */
	struct recorder *rec;
	struct session *session;
	const struct py_target *target;
	enum gc_probe_kind gc_probe;
	enum controller_stop_reason stopped;
	const char *output;	/* the profile's path (--rotate: the base of the names) */
	int files;		/* profile files are written (not with --push alone) */
	const char *gc_log;	/* NULL: none */
	struct rotation rotation;
	struct timespec period_start;	/* wall clock, for the names */
	struct progress progress;
	struct pusher *pusher;	/* --push */
};

static void end_command(struct run *run);

/* Waits (launch mode) until the command has started a CPython interpreter. */
static void find_interpreter(struct run *run)
{
	uint64_t deadline = monotonic_ns() + (run->is_child ? PYTHON_START_TIMEOUT_NS : 0);
	char err[ERRLEN];
	int rc;

	for (;;) {
		rc = py_target_find(run->pid, &run->found, err, sizeof(err));
		if (rc == PY_TARGET_OK)
			rc = py_target_prepare(&run->found, err, sizeof(err));
		if (rc == PY_TARGET_OK)
			return;
		if (rc == PY_TARGET_UNSUPPORTED || rc == PY_TARGET_GONE)
			break;
		if (!run->is_child && rc == PY_TARGET_NOT_PYTHON)
			break;
		if (monotonic_ns() > deadline || stop_signal ||
		    process_exited(run->pid, run->pidfd, run->is_child, &run->exit_status)) {
			if (rc == PY_TARGET_NOT_READY)
				snprintf(err, sizeof(err), "process %d did not finish starting CPython",
					 run->pid);
			break;
		}
		usleep(2000);
	}
	end_command(run);
	die(err);
}

static int should_stop(void *ctx)
{
	(void)ctx;
	return stop_signal != 0;
}

/* Records the kernel could not hand us (ring full): the session's, shared
 * by every process of a group. */
static uint64_t run_lost(struct run *run)
{
	uint64_t counters[EP_CNT_MAX];

	session_counters(run->session, counters);
	return counters[EP_CNT_LOST];
}

static void show_progress(struct run *run, uint64_t now)
{
	struct progress *progress = &run->progress;

	if (!progress->f || now < progress->next_ns)
		return;
	progress_update(progress, now, (now - recorder_t0(run->rec)) / 1e9, recorder_kept(run->rec),
			(unsigned long long)run_lost(run), recorder_analysis(run->rec)->gcs.n);
}

/* --rotate: SIGUSR1 asks for a period; the progress line */
static void on_tick(void *ctx, uint64_t now)
{
	struct run *run = ctx;

	if (cut_requested) {
		cut_requested = 0;
		controller_request_cut(&run->ctl);
	}
	show_progress(run, now);
}

static void fill_writer_options(struct run *run, struct writer_options *w,
				struct recording_info *info);
static void end_command(struct run *run);

/* The run history's database: --history-db, else the user's default. */
static int open_history(const struct options *o, struct hist_db **db, char *err, size_t len)
{
	char path[4096];

	if (!o->history_db && hist_default_path(path, sizeof(path), 1, err, len))
		return -1;
	return hist_db_open(db, o->history_db ? o->history_db : path, 1, err, len);
}

/* --history: the profile as its speedscope recording, read back as diff
 * reads it, stored as a run named after its file (source). A failure is
 * said, the recording stands. */
static void store_history(const struct options *o, const char *source, const struct profile *p,
			  const struct writer_options *wopts)
{
	struct hist_add add = { o->history, source, (long long)time(NULL), o->tags, o->ntags };
	struct recording r;
	struct hist_db *db = NULL;
	struct fs_identity root;
	char *buf = NULL, err[ERRLEN], shown[4 * ERRLEN];
	size_t len = 0;
	long long id = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc = -1;

	memset(&r, 0, sizeof(r));
	snprintf(err, sizeof(err), "out of memory");
	if (f && !speedscope_writer.write(p, wopts, f) && !fclose(f)) {
		f = NULL;
		/* the database is the user's: under sudo, made and written as them */
		sudo_fs_enter(&root);
		rc = recording_read_buffer(&r, "the recording", buf, len, err, sizeof(err)) ||
		     open_history(o, &db, err, sizeof(err)) ||
		     hist_add_recording(db, &add, &r, &id, err, sizeof(err)) ? -1 : 0;
		hist_db_close(db);
		db = NULL;
		sudo_fs_leave(&root);
	}
	if (f)
		fclose(f);
	if (rc)
		fprintf(stderr, "ebpfprof: history not stored: %s\n", printable(err, shown, sizeof(shown)));
	else
		fprintf(stderr, "ebpfprof: stored as run #%lld of series %s\n", id,
			printable(o->history, shown, sizeof(shown)));
	hist_db_close(db);
	recording_free(&r);
	free(buf);
}

/* A write failed: the only recording ends, and the launched command with it
 * (it never outlives ebpfprof); one of several fails alone. */
static void write_failed(struct run *run, const char *path)
{
	char err[ERRLEN], shown[4 * ERRLEN];

	snprintf(err, sizeof(err), "cannot write %s: %s", path, strerror(errno));
	if (!run->several) {
		end_command(run);
		die(err);
	}
	fprintf(stderr, "ebpfprof: process %d: %s\n", run->pid, printable(err, shown, sizeof(shown)));
	run->failed = 1;
}

/* profile_path NULL: no profile file (--push alone). */
static void write_outputs(struct run *run, const char *profile_path, const char *gc_log_path)
{
	struct writer_options wopts = { .threads = run->o->threads };
	struct recording_info info;

	fill_writer_options(run, &wopts, &info);
	if (profile_path &&
	    writer_write_file(run->o->writer, recorder_profile(run->rec), &wopts, profile_path))
		write_failed(run, profile_path);
	if (run->o->history)
		store_history(run->o, run->several ? profile_path : run->o->output,
			      recorder_profile(run->rec), &wopts);
	if (gc_log_path && report_gc_log(gc_log_path, recorder_analysis(run->rec),
					 recorder_profile(run->rec),
					 (uint64_t)(run->o->wait_threshold_ms * 1e6)))
		write_failed(run, gc_log_path);
}

/* --rotate: the files of the period that started at run->period_start,
 * under names no file has yet (a clock stepped back, an earlier run). */
static void period_paths(struct run *run, char *prof, char *log, size_t len)
{
	unsigned ms = run->period_start.tv_nsec / 1000000;
	const char *gc_log = run->gc_log;

	do {
		run->rotation.seq++;
		period_name(prof, len, run->output, run->o->writer->suffix, run->period_start.tv_sec,
			    ms, run->rotation.seq);
		if (gc_log)
			period_name(log, len, gc_log, ends_with(gc_log, ".gc.jsonl") ? ".gc.jsonl" : ".jsonl",
				    run->period_start.tv_sec, ms, run->rotation.seq);
	} while (!access(prof, F_OK) || (gc_log && !access(log, F_OK)));
}

/* --push: the period's profile of each process, spooled for the push thread. */
static void push_period(struct run *run)
{
	struct writer_options wopts = { .threads = run->o->threads };
	struct recording_info info;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	fill_writer_options(run, &wopts, &info);
	pusher_period(run->pusher, recorder_profile(run->rec), &wopts,
		      run->period_start.tv_sec + run->period_start.tv_nsec / 1e9,
		      now.tv_sec + now.tv_nsec / 1e9);
}

/* Writes the period's files (with --push, only when -o named them), pushes
 * it, deletes the oldest files beyond --keep. */
static void write_period(struct run *run, char *prof, char *log, size_t len)
{
	const char *paths[3] = { prof, run->gc_log ? log : NULL, NULL };
	int files = run->files;

	if (run->o->push.url)
		push_period(run);
	period_paths(run, prof, log, len);
	write_outputs(run, files ? prof : NULL, paths[1]);
	if (!files) {
		prof[0] = '\0';
		paths[0] = paths[1];
		paths[1] = NULL;
	}
	if (rotation_written(&run->rotation, paths))
		die("out of memory");
}

/* --rotate or SIGUSR1: the period so far is a complete profile (the
 * controller cut it); the recording goes on without detaching anything. */
static void on_period(void *ctx, uint64_t end_ns)
{
	struct run *run = ctx;
	char prof[PATH_MAX], log[PATH_MAX];
	struct timespec next_start;
	double secs;

	(void)end_ns;
	clock_gettime(CLOCK_REALTIME, &next_start);
	secs = recorder_profile(run->rec)->duration_ns / 1e9;
	write_period(run, prof, log, sizeof(prof));
	fprintf(stderr, "ebpfprof: period %u: %.2f s, %lu samples, %s%s\n",
		run->rotation.periods, secs, recorder_kept(run->rec), prof[0] ? "wrote " : "pushed",
		prof);
	run->period_start = next_start;
}

static void record(struct run *run)
{
	char err[ERRLEN];

	if (controller_attach(&run->ctl, &run->found, run->pidfd, run->is_child, err, sizeof(err))) {
		end_command(run);
		die(err);
	}
	run->gc_probe = run->ctl.gc_probe;
	progress_init(&run->progress, stderr);
	clock_gettime(CLOCK_REALTIME, &run->period_start);
	run->stopped = controller_run(&run->ctl);
	progress_clear(&run->progress);
	controller_stop(&run->ctl);
}

/* The launched command, and whatever it started in its process group, does
 * not outlive the recording, whatever ends it. */
static void end_command(struct run *run)
{
	if (run->is_child && run->pid > 0) {
		end_launched(run->pid, &run->exit_status);
		run->pid = 0;
	}
}

static const char *stop_reason(const struct run *run)
{
	if (stop_signal == SIGINT)
		return "interrupted";
	if (stop_signal)
		return "terminated";
	if (run->stopped == CONTROLLER_TARGET_EXITED)
		return "target exited";
	return "duration reached";
}

/* The recording's facts, for the writers and the summary. */
static void recording_info_of(struct run *run, struct recording_info *info)
{
	*info = (struct recording_info){
		.samples = recorder_kept(run->rec),
		.lost = run_lost(run),
		.python_major = run->target->major,
		.python_minor = run->target->minor,
		.gc_timing = gc_probe_name(run->gc_probe),
		.stop_reason = stop_reason(run),
		.idle = run->o->idle,
		.gil_only = run->o->gil_only,
	};
}

static void print_losses(FILE *f, void *ctx)
{
	struct run *run = ctx;

	/* the session's own losses are said once, at the end of several */
	if (run->several)
		recorder_print_losses(run->rec, f, run->o->verbose);
	else
		controller_print_losses(&run->ctl, f);
}

static void print_summary(struct run *run, const char *path, const char *gc_log)
{
	struct recording_info info;
	struct recording_summary s = {
		.info = &info,
		.profile = recorder_profile(run->rec),
		.analysis = recorder_analysis(run->rec),
		.children = run->o->subprocesses ? (long)recorder_nprocs(run->rec) - 1 : -1,
		.gc_needs_sys_admin = run->gc_probe == GC_PROBE_NONE &&
				      (run->target->has_usdt || run->target->has_symtab) &&
				      !preflight_sys_admin(),
		.gc_log = gc_log,
		.wait_threshold_ms = run->o->wait_threshold_ms,
		.format = run->o->writer->name,
		.path = path,
		.print_losses = print_losses,
		.ctx = run,
	};

	recording_info_of(run, &info);
	report_summary(stderr, &s);
}

/* What the writers may keep besides the samples: the exact GC pauses and
 * waits, and the recording's facts (ebpfprof diff reads them back). */
static void fill_writer_options(struct run *run, struct writer_options *w,
				struct recording_info *info)
{
	recording_info_of(run, info);
	w->analysis = recorder_analysis(run->rec);
	w->info = info;
	w->gc_min_ns = (uint64_t)(run->o->gc_min_ms * 1e6);
	w->group_by = run->o->group_by;
}

static void on_cut_signal(int sig)
{
	(void)sig;
	cut_requested = 1;
}

static void check_environment(struct options *o, char *output, size_t outlen)
{
	char err[ERRLEN];

	if (o->pid && preflight_pid(o->pid, err, sizeof(err)))
		die(err);
	if (preflight_btf(err, sizeof(err)) || preflight_privileges(err, sizeof(err)))
		die(err);
	if (o->output)
		snprintf(output, outlen, "%s", o->output);
	else
		default_output(o, o->pid ? o->pid : getpid(), output, outlen);
	if ((!o->push.url || o->output) && preflight_output(output, err, sizeof(err)))
		die(err);
	if (o->gc_log && preflight_output(o->gc_log, err, sizeof(err)))
		die(err);
	if (o->history) {
		struct hist_db *db;

		/* a database refused is said before the recording, not after */
		if (open_history(o, &db, err, sizeof(err)))
			die(err);
		hist_db_close(db);
	}
}

/* A directory for one file per process: made if missing, writable. */
static void prepare_dir(const char *dir)
{
	char probe[PATH_MAX], err[ERRLEN];

	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(err, sizeof(err), "cannot create directory %s: %s", dir, strerror(errno));
		die(err);
	}
	snprintf(probe, sizeof(probe), "%s/ebpfprof-check", dir);
	if (preflight_output(probe, err, sizeof(err)))
		die(err);
}

/* The recording's options, for the controller or the group. */
static void controller_config_of(struct options *o, struct controller_config *cc)
{
	*cc = (struct controller_config){
		.rate_hz = o->rate_hz, .wait_threshold_ms = o->wait_threshold_ms,
		.gil_only = o->gil_only, .by_function = o->by_function, .idle = o->idle,
		.native = o->native, .native_stack_bytes = o->native_stack_kib * 1024,
		.subprocesses = o->subprocesses, .verbose = o->verbose,
		.labels = o->label.labels, .nlabels = o->label.nlabels, .dask = o->label.dask,
		.tasks = o->tasks,
		.duration_ns = (uint64_t)(o->duration * 1e9), .period_ns = (uint64_t)(o->rotate * 1e9),
		.periods = CONTROLLER_PERIODS_SEPARATE,
	};
}

/* --pid A,B or --match: what every process's outputs share. */
struct several {
	struct options *o;
	const char *outdir;	/* NULL: no profile files (--push alone) */
	struct pusher *pusher;	/* --push */
};

static void free_run(struct run *run)
{
	rotation_free(&run->rotation);
	free((char *)run->output);
	free((char *)run->gc_log);
	free(run);
}

/* A process joins: its files are named DIR/ebpfprof-PID.SUFFIX and
 * DIR/ebpfprof-PID.gc.jsonl (--rotate: the bases of each period's names),
 * and refused now if they cannot be written. */
static void *several_start(void *ctx, const struct py_target *t, char *err, size_t errlen)
{
	struct several *sv = ctx;
	struct options *o = sv->o;
	struct run *run = calloc(1, sizeof(*run));
	char path[PATH_MAX];

	if (!run) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*run = (struct run){ .o = o, .pid = t->pid, .pidfd = -1, .several = 1,
			     .files = sv->outdir != NULL, .pusher = sv->pusher };
	run->rotation.keep = o->keep;
	snprintf(path, sizeof(path), "%s/ebpfprof-%d%s", sv->outdir ? sv->outdir : ".", t->pid,
		 o->writer->suffix);
	run->output = strdup(path);
	if (o->gc_log) {
		snprintf(path, sizeof(path), "%s/ebpfprof-%d.gc.jsonl", o->gc_log, t->pid);
		run->gc_log = strdup(path);
	}
	if (!run->output || (o->gc_log && !run->gc_log)) {
		snprintf(err, errlen, "out of memory");
	} else if ((!run->files || !preflight_output(run->output, err, errlen)) &&
		   (!run->gc_log || !preflight_output(run->gc_log, err, errlen))) {
		clock_gettime(CLOCK_REALTIME, &run->period_start);
		return run;
	}
	free_run(run);
	return NULL;
}

static void several_discard(void *ctx, void *out)
{
	(void)ctx;
	free_run(out);
}

/* The run reads the member's recording. */
static struct run *bind_member(void *out, struct group_member *m)
{
	struct run *run = out;

	run->rec = &m->rec;
	run->session = m->session;
	run->target = &m->target;
	run->gc_probe = m->gc_probe;
	run->stopped = m->stopped;
	return run;
}

static void several_period(void *ctx, struct group_member *m, void *out, uint64_t end_ns)
{
	(void)ctx;
	on_period(bind_member(out, m), end_ns);
}

/* The process's last profile (or period), written as a recording of its
 * own writes it, and its summary. */
static int several_end(void *ctx, struct group_member *m, void *out)
{
	struct run *run = bind_member(out, m);
	char prof[PATH_MAX], log[PATH_MAX];
	int failed;

	(void)ctx;
	if (run->o->rotate) {
		write_period(run, prof, log, sizeof(prof));
	} else {
		write_outputs(run, run->files ? run->output : NULL, run->gc_log);
		snprintf(prof, sizeof(prof), "%s", run->files ? run->output : "");
		snprintf(log, sizeof(log), "%s", run->gc_log ? run->gc_log : "");
	}
	if (!run->failed)
		print_summary(run, prof[0] ? prof : NULL, run->gc_log ? log : NULL);
	for (size_t i = 0; run->pusher && i < recorder_nprocs(run->rec); i++)
		pusher_forget(run->pusher, recorder_pid(run->rec, i));
	failed = run->failed;
	free_run(run);
	return failed ? -1 : 0;
}

static void several_checks(struct options *o, const char *outdir)
{
	char err[ERRLEN];

	for (size_t i = 0; i < o->npids; i++)
		if (preflight_pid(o->pids[i], err, sizeof(err)))
			die(err);
	if (preflight_btf(err, sizeof(err)) || preflight_privileges(err, sizeof(err)))
		die(err);
	if (outdir)
		prepare_dir(outdir);
	if (o->gc_log)
		prepare_dir(o->gc_log);
}

/* --pid A,B or --match: every process in one recording session (multi.c),
 * each with its own outputs, recorded with the options given here. */
static int record_several(struct options *o)
{
	struct controller_config cc;
	struct pusher pusher;
	struct several sv = { .o = o, .outdir = o->output ? o->output : o->push.url ? NULL : "." };
	char where[PATH_MAX + 8], err[ERRLEN];
	struct multi_opts mo = { .cfg = &cc, .max_processes = o->max_processes, .pids = o->pids,
				 .npids = o->npids, .pattern = o->match, .where = where,
				 .out = { several_start, several_discard, several_period,
					  several_end, &sv } };
	struct proc_matcher matcher;
	int rc;

	several_checks(o, sv.outdir);
	snprintf(where, sizeof(where), sv.outdir ? "into %s" : "and pushed", sv.outdir);
	/* credentials, spool: refused before anything is recorded */
	if (o->push.url) {
		if (pusher_open(&pusher, &o->push, err, sizeof(err)) ||
		    pusher_start(&pusher, err, sizeof(err)))
			die(err);
		sv.pusher = &pusher;
	}
	if (o->match) {
		if (matcher_init(&matcher, o->match, err, sizeof(err)))
			die(err);
		mo.match = &matcher;
	}
	frame_naming_set(&o->naming);
	controller_config_of(o, &cc);
	rc = multi_run(&mo, &stop_signal, &cut_requested);
	if (o->push.url) {
		pusher_stop(&pusher);
		pusher_print(&pusher, stderr);
		pusher_close(&pusher);
	}
	if (o->match)
		matcher_free(&matcher);
	free(o->pids);
	return rc;
}

static void install_cut_signal(struct options *o)
{
	if (o->rotate) {
		struct sigaction sa = { .sa_handler = on_cut_signal };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
	} else {
		signal(SIGUSR1, SIG_IGN);	/* a period of its own only with --rotate */
	}
}

/* The controller opened on what to record: a running target prepared first
 * (only the programs it needs are loaded), a command launched after the
 * load (so that its start is seen). */
static void start_run(struct run *run, struct options *o, char *output, size_t output_len)
{
	struct controller_config cc;
	char err[ERRLEN];

	controller_config_of(o, &cc);
	cc.should_stop = should_stop;
	cc.on_tick = on_tick;
	cc.on_period = on_period;
	cc.ctx = run;
	if (session_check_env(err, sizeof(err)))
		die(err);
	if (!o->command) {
		/* a running target is known before the programs load: only what
		 * it needs is loaded (its GC probes) */
		run->pid = o->pid;
		run->pidfd = watch_process(run->pid);
		find_interpreter(run);
		cc.gc_probes = session_gc_probes_for(&run->found);
	}
	if (controller_open(&run->ctl, &cc, err, sizeof(err)))
		die(err);
	run->rec = controller_recorder(&run->ctl);
	run->session = run->ctl.session;
	if (o->command) {
		/* launched once the programs are loaded, so its start is seen */
		run->pid = launch_command(o->command, o->as_root, err, sizeof(err));
		if (run->pid < 0)
			die(err);
		run->is_child = 1;
		stop_signal_end_on_second(run->pid);
		if (!o->output)
			default_output(o, run->pid, output, output_len);
		run->pidfd = watch_process(run->pid);
		find_interpreter(run);
	}
}

/* The outputs written, the summary said, everything closed. */
static void end_run(struct run *run, struct pusher *pusher, char *output, size_t output_len)
{
	const struct options *o = run->o;
	char log[PATH_MAX];

	if (o->rotate) {
		write_period(run, output, log, output_len);
	} else {
		write_outputs(run, output, o->gc_log);
		snprintf(log, sizeof(log), "%s", o->gc_log ? o->gc_log : "");
	}
	if (o->push.url)
		pusher_stop(pusher);
	print_summary(run, output[0] ? output : NULL, o->gc_log ? log : NULL);
	if (o->push.url) {
		pusher_print(pusher, stderr);
		pusher_close(pusher);
	}
	rotation_free(&run->rotation);
	free((char *)run->output);
	free((char *)run->gc_log);
	controller_close(&run->ctl);
	end_command(run);
}

int cmd_record(int argc, char **argv)
{
	struct options o = { .rate_hz = SESSION_DEFAULT_RATE_HZ, .writer = &speedscope_writer, .wait_threshold_ms = CONTROLLER_WAIT_THRESHOLD_MS };
	struct argp argp = { option_list, parse_option, "--pid PID[,PID...] | --match REGEX | -- COMMAND [ARGS...]", doc, NULL, NULL, NULL };
	char output[PATH_MAX], err[ERRLEN];
	struct pusher pusher;
	struct run run = { .o = &o, .pidfd = -1, .target = &run.found, .pusher = &pusher,
			   .gc_log = NULL };

	o.dashdash = find_dashdash(argc, argv);
	argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &o);
	if (o.pids || o.match) {
		install_stop_signals();
		install_cut_signal(&o);
		return record_several(&o);
	}
	check_environment(&o, output, sizeof(output));
	/* credentials, spool: refused before anything is recorded */
	if (o.push.url && pusher_open(&pusher, &o.push, err, sizeof(err)))
		die(err);
	frame_naming_set(&o.naming);
	install_stop_signals();
	install_cut_signal(&o);
	start_run(&run, &o, output, sizeof(output));
	recorder_set_command(run.rec, o.command ? o.command[0] : run.found.shown_path);
	run.rotation.keep = o.keep;
	/* period names derive from a copy: write_period reuses "output" */
	run.output = strdup(output);
	run.files = !o.push.url || o.output;
	run.gc_log = o.gc_log ? strdup(o.gc_log) : NULL;
	if (!run.output || (o.gc_log && !run.gc_log))
		die("out of memory");
	if (o.push.url && pusher_start(&pusher, err, sizeof(err)))
		die(err);
	record(&run);
	end_run(&run, &pusher, output, sizeof(output));
	return 0;
}
