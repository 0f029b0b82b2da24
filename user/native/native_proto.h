/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --native's cage (native_cage.h): the messages between ebpfprof and the
 * helper process that parses the target's files. One message is one
 * SOCK_SEQPACKET record: a u32 type, then the fields below in this machine's
 * byte order (both ends are the same binary). The parent sends one request
 * and reads messages until its reply; meanwhile the helper may ask for the
 * file of a module (NP_ASK_FD), which the parent answers with NP_FD and the
 * descriptor (SCM_RIGHTS). Every message is checked whole by its reader:
 * the helper is as hostile as the files it parses.
 */
#ifndef EP_NATIVE_PROTO_H
#define EP_NATIVE_PROTO_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "native_sym.h"

/* Bytes of stack one unwind request carries at most. */
#define NP_STACK_MAX		(64u << 10)
/* Bytes of one message at most (a full module list, or a full stack). */
#define NP_MSG_MAX		(NP_STACK_MAX + 1024)
/* Bytes of a symbol name in a reply, NUL excluded. */
#define NP_NAME_MAX		(sizeof(((struct native_sym *)0)->name) - 1)
#define NP_REGS			17

enum np_type {
	/* parent to helper */
	NP_REPORT = 1,		/* the process's modules (the list replaces the last) */
	NP_UNWIND,		/* a sample's registers and stack */
	NP_SYMBOLIZE,		/* a pc */
	NP_FD,			/* the file asked for (with a descriptor), or none */
	/* helper to parent */
	NP_ASK_FD = 0x81,	/* the file of module id */
	NP_REPORTED,		/* the report is taken */
	NP_UNWOUND,		/* pcs */
	NP_SYMBOL,		/* the name of a pc */
};

/* A module: a file mapped at [low, high), low where its offset 0 would be. */
struct np_module {
	uint32_t id;		/* the parent's, stable while the mapping stays */
	uint64_t low, high;
};

enum np_symbol_kind {
	NP_SYM_NAME,		/* name holds the function's */
	NP_SYM_CFI,		/* no symbol: start is where its CFI entry starts */
	NP_SYM_NONE,		/* nothing known */
};

struct np_request {
	uint32_t type;
	union {
		struct {
			uint32_t n;
			const uint8_t *mods;	/* n packed modules: use np_module_at */
		} report;
		struct {
			uint32_t tid, max, stack_len;
			uint64_t regs[NP_REGS];
			const uint8_t *stack;	/* in the message */
		} unwind;
		uint64_t pc;			/* NP_SYMBOLIZE */
		uint32_t fd_ok;			/* NP_FD: a descriptor came with it */
	};
};

struct np_reply {
	uint32_t type;
	union {
		uint32_t ask_id;		/* NP_ASK_FD */
		struct {
			uint32_t n, complete;
			uint32_t slow_us;	/* the longest step of the walk */
			uint64_t slow_pc;	/* the pc whose unwind step it was */
			uint64_t pcs[NATIVE_MAX_FRAMES];
		} unwound;
		struct {
			uint32_t kind;
			int32_t line;
			uint32_t spent_us;	/* the helper's time on it */
			uint64_t start;		/* NP_SYM_CFI */
			char name[NP_NAME_MAX + 1];
		} symbol;
	};
};

/* Decoders: 0, or -1 for a message malformed or out of bounds. */
int np_decode_request(const uint8_t *msg, size_t len, struct np_request *req);
int np_decode_reply(const uint8_t *msg, size_t len, struct np_reply *rep);
/* The i-th module of a decoded NP_REPORT (i < n). */
void np_module_at(const struct np_request *req, uint32_t i, struct np_module *out);

/* Encoders: the message's length in buf (NP_MSG_MAX bytes), 0 if it does not fit. */
size_t np_encode_report(uint8_t *buf, const struct np_module *mods, uint32_t n);
size_t np_encode_unwind(uint8_t *buf, uint32_t tid, const uint64_t *regs, const uint8_t *stack,
			uint32_t stack_len, uint32_t max);
size_t np_encode_u64(uint8_t *buf, uint32_t type, uint64_t value);
size_t np_encode_u32(uint8_t *buf, uint32_t type, uint32_t value);
/* The two replies from what the helper found (rep->type set or not). */
size_t np_encode_unwound(uint8_t *buf, const struct np_reply *rep);
size_t np_encode_symbol(uint8_t *buf, const struct np_reply *rep);

/* One message over a SOCK_SEQPACKET socket, with descriptor fd unless -1.
 * 0 or -1. */
int np_send(int sock, const uint8_t *msg, size_t len, int fd);
/* One message (MSG_DONTWAIT), into buf of NP_MSG_MAX bytes: its length, or
 * -1 (none, peer gone, or cut); a descriptor that came with it goes to *fd
 * when fd is not NULL, else is closed (so is any beyond the first). */
ssize_t np_recv(int sock, uint8_t *buf, int *fd);

#endif
