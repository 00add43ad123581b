/* Code generated from github.com/plimsoll/plimsoll/abi by abi/cmd/abigen. DO NOT EDIT. */
#ifndef PLIMSOLL_ABI_H
#define PLIMSOLL_ABI_H

#define ABI_VERSION 2

/* The import module and its functions (preamble/ABI.md). */
#define ABI_MODULE "plimsoll"
#define ABI_FN_HOST_CALL "host_call" /* (req_ptr, req_len, resp_ptr, resp_cap) -> n, since v1 */
#define ABI_FN_HOST_RESPONSE "host_response" /* (ptr, cap) -> n, since v1 */
#define ABI_FN_HOST_SUBMIT "host_submit" /* (req_ptr, req_len) -> id, since v2 */
#define ABI_FN_HOST_WAIT "host_wait" /* (ids_ptr, ids_cap, timeout_ms) -> count, since v2 */
#define ABI_FN_HOST_RESULT "host_result" /* (id, ptr, cap) -> n, since v2 */

/* Negative results; a non-negative result is a length or an id. */
#define ABI_ERR_BOUNDS (-1) /* a pointer/length pair lies outside guest memory */
#define ABI_ERR_NO_PENDING (-2) /* host_response: there is no pending response */
#define ABI_ERR_TOO_SMALL (-3) /* host_response: the buffer is smaller than the pending response */
#define ABI_ERR_NO_RUN (-4) /* called outside a run; nothing was recorded */
#define ABI_ERR_INFLIGHT (-5) /* host_submit: limits.max_inflight calls are in flight; wait first */
#define ABI_ERR_UNKNOWN (-6) /* host_result: no completed, unread call has this id */
#define ABI_WAIT_FOREVER 0xffffffffu /* host_wait's timeout_ms: until a call completes or the run ends */

/* Results of a reactor's run(). */
#define ABI_RUN_OK 0
#define ABI_RUN_FAILED 1
#define ABI_RUN_LIMITED 2

/* Outcomes, and the header on the broker's own answers that names them. */
#define ABI_OUTCOME_HEADER "Plimsoll-Outcome"
#define ABI_OUTCOME_FORWARDED "forwarded"
#define ABI_OUTCOME_SHED "shed"
#define ABI_OUTCOME_DENIED "denied"
#define ABI_OUTCOME_OVER_BUDGET "over_budget"
#define ABI_OUTCOME_INVALID "invalid"
#define ABI_OUTCOME_FAILED "failed"

#endif
