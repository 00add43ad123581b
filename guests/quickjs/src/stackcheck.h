/* Forced-included (clang -include) ahead of each QuickJS-ng source file.
 *
 * At the pinned commit QuickJS-ng turns its stack-depth check off when __wasi__ is defined, so a
 * deep recursion runs off the end of the shadow stack and traps. Our build gives the stack a known
 * size (-Wl,-z,stack-size=, with --stack-first) and wants the check on. So this header includes
 * every system header the engine uses while __wasi__ is still defined (their include guards make
 * the engine's own #includes no-ops), then hides __wasi__ from the engine and names the platform
 * the engine treats like WASI in every other respect (no threads, no atomics), DJGPP. */
#include <alloca.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#undef __wasi__
#define __DJGPP 1
