/* Code generated from abi/ — do not edit.
 *
 * plimsoll guest ABI, version 1 (preamble/ABI.md). Until the abi/ generator exists this header is
 * written by hand in the shape the generator will produce; replace it with its output. */
#ifndef PLIMSOLL_ABI_H
#define PLIMSOLL_ABI_H

#define ABI_VERSION 1

#define ABI_MODULE "plimsoll"
#define ABI_FN_HOST_CALL "host_call"
#define ABI_FN_HOST_RESPONSE "host_response"

/* Negative results of host_call and host_response. */
#define ABI_ERR_BOUNDS (-1)     /* a pointer/length pair lies outside guest memory */
#define ABI_ERR_NO_PENDING (-2) /* host_response: no pending response */
#define ABI_ERR_TOO_SMALL (-3)  /* host_response: the buffer is smaller than the response */
#define ABI_ERR_NO_RUN (-4)     /* called outside a run (e.g. during _initialize) */

/* Results of a reactor's run(). */
#define ABI_RUN_OK 0
#define ABI_RUN_FAILED 1
#define ABI_RUN_LIMITED 2

#endif
