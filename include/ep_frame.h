/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Decoding one CPython interpreter frame read into a buffer, shared by the
 * kernel's walk (bpf/pystack.bpf.h) and the userspace one (user/cpython/py_stack.c):
 * which code object it runs, at which instruction, and whether it is Python
 * code at all. The buffer holds EP_FRAME_READ_MAX bytes and 16 to spare;
 * every offset is masked into it, so the verifier sees each access in
 * bounds and a forged configuration cannot reach outside it.
 */
#ifndef EP_FRAME_H
#define EP_FRAME_H

#include "ebpfprof.h"

#define EP_FRAME_INLINE static inline __attribute__((always_inline))

EP_FRAME_INLINE __u64 ep_frame_u64(const __u8 *buf, __u32 off)
{
	const __u8 *p = buf + (off & (EP_FRAME_READ_MAX - 1));
#ifdef __bpf__
	/* a plain load: clang cannot assume the offset aligned and turns a
	 * memcpy into eight byte loads and shifts; x86-64 loads unaligned
	 * words, and the verifier allows them in map values there */
	return *(const __u64 *)p;
#else
	__u64 v;

	__builtin_memcpy(&v, p, sizeof(v));
	return v;
#endif
}

EP_FRAME_INLINE __s32 ep_frame_s32(const __u8 *buf, __u32 off)
{
	const __u8 *p = buf + (off & (EP_FRAME_READ_MAX - 1));
#ifdef __bpf__
	return *(const __s32 *)p;
#else
	__s32 v;

	__builtin_memcpy(&v, p, sizeof(v));
	return v;
#endif
}

/* The caller's frame, 0 at the bottom of the stack. */
EP_FRAME_INLINE __u64 ep_frame_previous(const struct ep_proc_cfg *cfg, const __u8 *buf)
{
	return ep_frame_u64(buf, cfg->frame_previous);
}

/* The frame's globals (a dict), 0 when not known. */
EP_FRAME_INLINE __u64 ep_frame_globals(const struct ep_proc_cfg *cfg, const __u8 *buf)
{
	return cfg->frame_globals == EP_NO_OFFSET ? 0 : ep_frame_u64(buf, cfg->frame_globals);
}

/* 3.12+: a frame owned by the C stack is a shim between calls, not Python code. */
EP_FRAME_INLINE int ep_frame_is_shim(const struct ep_proc_cfg *cfg, const __u8 *buf)
{
	return cfg->frame_owner != EP_NO_OFFSET && cfg->owner_skip_min &&
	       buf[cfg->frame_owner & (EP_FRAME_READ_MAX - 1)] >= cfg->owner_skip_min;
}

/* The frame's code object (3.14's tag bits cleared), 0 for none. */
EP_FRAME_INLINE __u64 ep_frame_code(const struct ep_proc_cfg *cfg, const __u8 *buf)
{
	return ep_frame_u64(buf, cfg->frame_code) & ~cfg->code_tag_mask;
}

/* Byte offset of the frame's current instruction in its code, negative for
 * a frame that has not started yet (3.11+: "incomplete" frames). */
EP_FRAME_INLINE __s64 ep_frame_instr_offset(const struct ep_proc_cfg *cfg, const __u8 *buf,
					    __u64 code)
{
	switch (cfg->instr_kind) {
	case EP_INSTR_LASTI_BYTES:
		return ep_frame_s32(buf, cfg->frame_instr);
	case EP_INSTR_LASTI_UNITS:
		return (__s64)ep_frame_s32(buf, cfg->frame_instr) * 2;
	default:
		return (__s64)(ep_frame_u64(buf, cfg->frame_instr) - (code + cfg->code_adaptive));
	}
}

/* Whether a frame at this instruction offset is shown: 3.11+ frames that
 * have not started run no code yet; older ones report -1 before their first
 * instruction and are shown without a line. */
EP_FRAME_INLINE int ep_frame_started(const struct ep_proc_cfg *cfg, __s64 instr)
{
	return instr >= 0 || cfg->instr_kind != EP_INSTR_POINTER;
}

#endif
