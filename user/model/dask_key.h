/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --dask: a task key's prefix, by the rules of dask's key_split (dask/utils.py,
 * checked against 2022.12): the key's words up to the first that is not
 * alphabetic or is an 8-letter hex word, a leading non-letter word cut at its
 * comma and stripped of _'()" , a 32-digit hex key is "data", a <...> key is
 * its class's last dotted name, and anything that fails is "Other".
 * Letters are ASCII letters here (Python counts other alphabets too).
 */
#ifndef EP_DASK_KEY_H
#define EP_DASK_KEY_H
#include <stddef.h>

/* The prefix of key (a str key, or a tuple key's first item; NULL: not a
 * str) into out. */
void dask_key_split(const char *key, char *out, size_t len);

#endif
