/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef EBPFPROF_VERSION_H
#define EBPFPROF_VERSION_H

/* The Makefile passes the release; this is for builds outside it. */
#ifndef EP_VERSION
#define EP_VERSION "0.1.0"
#endif

#endif
