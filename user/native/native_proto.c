// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "native_proto.h"

#define MODULE_WIRE	(4 + 8 + 8)	/* id, low, high */

/* A cursor over a message being read: every take checks what is left. */
struct reader {
	const uint8_t *at;
	size_t left;
};

static int take(struct reader *r, void *out, size_t n)
{
	if (r->left < n)
		return -1;
	memcpy(out, r->at, n);
	r->at += n;
	r->left -= n;
	return 0;
}

static int take_u32(struct reader *r, uint32_t *v)
{
	return take(r, v, sizeof(*v));
}

static int take_u64(struct reader *r, uint64_t *v)
{
	return take(r, v, sizeof(*v));
}

static size_t put(uint8_t *buf, size_t at, const void *v, size_t n)
{
	memcpy(buf + at, v, n);
	return at + n;
}

static int decode_report(struct reader *r, struct np_request *req)
{
	if (take_u32(r, &req->report.n) || req->report.n > NATIVE_MAX_MODULES ||
	    r->left != (size_t)req->report.n * MODULE_WIRE)
		return -1;
	req->report.mods = r->at;
	return 0;
}

static int decode_unwind(struct reader *r, struct np_request *req)
{
	if (take_u32(r, &req->unwind.tid) || take_u32(r, &req->unwind.max) ||
	    take(r, req->unwind.regs, sizeof(req->unwind.regs)) ||
	    take_u32(r, &req->unwind.stack_len) || req->unwind.stack_len > NP_STACK_MAX ||
	    r->left != req->unwind.stack_len || !req->unwind.max ||
	    req->unwind.max > NATIVE_MAX_FRAMES)
		return -1;
	req->unwind.stack = r->at;
	return 0;
}

int np_decode_request(const uint8_t *msg, size_t len, struct np_request *req)
{
	struct reader r = { msg, len };

	memset(req, 0, sizeof(*req));
	if (take_u32(&r, &req->type))
		return -1;
	switch (req->type) {
	case NP_REPORT:
		return decode_report(&r, req);
	case NP_UNWIND:
		return decode_unwind(&r, req);
	case NP_SYMBOLIZE:
		return take_u64(&r, &req->pc) || r.left ? -1 : 0;
	case NP_FD:
		return take_u32(&r, &req->fd_ok) || r.left || req->fd_ok > 1 ? -1 : 0;
	}
	return -1;
}

void np_module_at(const struct np_request *req, uint32_t i, struct np_module *out)
{
	struct reader r = { req->report.mods + (size_t)i * MODULE_WIRE, MODULE_WIRE };

	take_u32(&r, &out->id);
	take_u64(&r, &out->low);
	take_u64(&r, &out->high);
}

static int decode_unwound(struct reader *r, struct np_reply *rep)
{
	if (take_u32(r, &rep->unwound.n) || take_u32(r, &rep->unwound.complete) ||
	    take_u32(r, &rep->unwound.slow_us) || take_u64(r, &rep->unwound.slow_pc) ||
	    rep->unwound.n > NATIVE_MAX_FRAMES || rep->unwound.complete > 1 ||
	    r->left != rep->unwound.n * sizeof(uint64_t))
		return -1;
	return take(r, rep->unwound.pcs, r->left);
}

/* A name: its bytes, no NUL among them, shorter than the parent's field. */
static int decode_symbol(struct reader *r, struct np_reply *rep)
{
	uint32_t len;

	if (take_u32(r, &rep->symbol.kind) || take(r, &rep->symbol.line, sizeof(rep->symbol.line)) ||
	    take_u32(r, &rep->symbol.spent_us) || take_u64(r, &rep->symbol.start) || take_u32(r, &len) ||
	    rep->symbol.kind > NP_SYM_NONE || rep->symbol.line < 0 || len > NP_NAME_MAX ||
	    r->left != len || take(r, rep->symbol.name, len) || memchr(rep->symbol.name, 0, len))
		return -1;
	rep->symbol.name[len] = 0;
	return rep->symbol.kind == NP_SYM_NAME && !len ? -1 : 0;
}

int np_decode_reply(const uint8_t *msg, size_t len, struct np_reply *rep)
{
	struct reader r = { msg, len };

	rep->type = 0;
	if (take_u32(&r, &rep->type))
		return -1;
	switch (rep->type) {
	case NP_ASK_FD:
		return take_u32(&r, &rep->ask_id) || r.left ? -1 : 0;
	case NP_REPORTED:
		return r.left ? -1 : 0;
	case NP_UNWOUND:
		return decode_unwound(&r, rep);
	case NP_SYMBOL:
		return decode_symbol(&r, rep);
	}
	return -1;
}

size_t np_encode_report(uint8_t *buf, const struct np_module *mods, uint32_t n)
{
	uint32_t type = NP_REPORT, i;
	size_t at = 0;

	if (n > NATIVE_MAX_MODULES || 8 + (size_t)n * MODULE_WIRE > NP_MSG_MAX)
		return 0;
	at = put(buf, at, &type, 4);
	at = put(buf, at, &n, 4);
	for (i = 0; i < n; i++) {
		at = put(buf, at, &mods[i].id, 4);
		at = put(buf, at, &mods[i].low, 8);
		at = put(buf, at, &mods[i].high, 8);
	}
	return at;
}

size_t np_encode_unwind(uint8_t *buf, uint32_t tid, const uint64_t *regs, const uint8_t *stack,
			uint32_t stack_len, uint32_t max)
{
	uint32_t type = NP_UNWIND;
	size_t at = 0;

	if (stack_len > NP_STACK_MAX)
		return 0;
	at = put(buf, at, &type, 4);
	at = put(buf, at, &tid, 4);
	at = put(buf, at, &max, 4);
	at = put(buf, at, regs, NP_REGS * sizeof(*regs));
	at = put(buf, at, &stack_len, 4);
	return put(buf, at, stack, stack_len);
}

size_t np_encode_u64(uint8_t *buf, uint32_t type, uint64_t value)
{
	return put(buf, put(buf, 0, &type, 4), &value, 8);
}

size_t np_encode_u32(uint8_t *buf, uint32_t type, uint32_t value)
{
	return put(buf, put(buf, 0, &type, 4), &value, 4);
}

size_t np_encode_unwound(uint8_t *buf, const struct np_reply *rep)
{
	uint32_t type = NP_UNWOUND, n = rep->unwound.n;
	size_t at;

	if (n > NATIVE_MAX_FRAMES)
		return 0;
	at = put(buf, 0, &type, 4);
	at = put(buf, at, &n, 4);
	at = put(buf, at, &rep->unwound.complete, 4);
	at = put(buf, at, &rep->unwound.slow_us, 4);
	at = put(buf, at, &rep->unwound.slow_pc, 8);
	return put(buf, at, rep->unwound.pcs, n * sizeof(uint64_t));
}

size_t np_encode_symbol(uint8_t *buf, const struct np_reply *rep)
{
	uint32_t type = NP_SYMBOL, len = strnlen(rep->symbol.name, NP_NAME_MAX);
	size_t at;

	at = put(buf, 0, &type, 4);
	at = put(buf, at, &rep->symbol.kind, 4);
	at = put(buf, at, &rep->symbol.line, 4);
	at = put(buf, at, &rep->symbol.spent_us, 4);
	at = put(buf, at, &rep->symbol.start, 8);
	at = put(buf, at, &len, 4);
	return put(buf, at, rep->symbol.name, len);
}

int np_send(int sock, const uint8_t *msg, size_t len, int fd)
{
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.space;
		mh.msg_controllen = sizeof(ctl.space);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

/* Keeps the first descriptor of a message for want (if any), closes the rest. */
static void take_fds(struct msghdr *mh, int *want)
{
	struct cmsghdr *c;
	size_t i, nfds;
	int fd;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfds; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (want && *want < 0)
				*want = fd;
			else
				close(fd);
		}
	}
}

ssize_t np_recv(int sock, uint8_t *buf, int *fd)
{
	union {
		struct cmsghdr hdr;
		char space[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = { buf, NP_MSG_MAX };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.space, .msg_controllen = sizeof(ctl.space) };
	ssize_t n;

	if (fd)
		*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	take_fds(&mh, fd);
	if (!n || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (fd && *fd >= 0)
			close(*fd);
		if (fd)
			*fd = -1;
		return -1;
	}
	return n;
}
