// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target of --native's cage protocol (user/native/native_proto.h):
 * the same bytes read as a request (the helper's parser) and as a reply
 * (ebpfprof's, of a helper it does not trust). What decodes must respect
 * the bounds the readers rely on, and encode back to the very bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "native_proto.h"

static uint8_t again[NP_MSG_MAX];

static void check_request(const uint8_t *data, size_t size)
{
	struct np_request req;
	struct np_module m;
	size_t len = 0;
	uint32_t i;

	if (np_decode_request(data, size, &req))
		return;
	switch (req.type) {
	case NP_REPORT:
		for (i = 0; i < req.report.n; i++)
			np_module_at(&req, i, &m);
		return;
	case NP_UNWIND:
		if (req.unwind.stack_len > NP_STACK_MAX || req.unwind.max > NATIVE_MAX_FRAMES)
			abort();
		len = np_encode_unwind(again, req.unwind.tid, req.unwind.regs, req.unwind.stack,
				       req.unwind.stack_len, req.unwind.max);
		break;
	case NP_SYMBOLIZE:
		len = np_encode_u64(again, req.type, req.pc);
		break;
	case NP_FD:
		len = np_encode_u32(again, req.type, req.fd_ok);
		break;
	default:
		abort();
	}
	if (len != size || memcmp(again, data, size))
		abort();
}

static void check_reply(const uint8_t *data, size_t size)
{
	static struct np_reply rep;
	size_t len;

	if (np_decode_reply(data, size, &rep))
		return;
	switch (rep.type) {
	case NP_ASK_FD:
		len = np_encode_u32(again, rep.type, rep.ask_id);
		break;
	case NP_REPORTED:
		len = sizeof(uint32_t);
		memcpy(again, &rep.type, len);
		break;
	case NP_UNWOUND:
		if (rep.unwound.n > NATIVE_MAX_FRAMES)
			abort();
		len = np_encode_unwound(again, &rep);
		break;
	case NP_SYMBOL:
		if (rep.symbol.kind > NP_SYM_NONE || rep.symbol.line < 0 ||
		    strlen(rep.symbol.name) > NP_NAME_MAX)
			abort();
		len = np_encode_symbol(again, &rep);
		break;
	default:
		abort();
	}
	if (len != size || memcmp(again, data, size))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > NP_MSG_MAX)
		return 0;
	check_request(data, size);
	check_reply(data, size);
	return 0;
}
