/* The engine built natively, for measuring and profiling it outside wasm (RATIONALE.md,
 * "Performance II (issue 24): where a numeric loop's time goes"); never shipped. It runs a tool
 * body as the reactor does (the body of an async function, input null), RUNS times, each in a
 * fresh runtime and context, and prints the result as JSON, a tab, and the median CPU time of one
 * run in ms (the evaluation and its jobs, not the runtime's creation).
 *
 * Built by `go run ./guests/internal/wasmbuild -native PATH [-native-m32]`, from the same pinned
 * and patched sources and optimisation flags as the module. Usage: PATH TOOL.js RUNS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quickjs.h"

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (size_t r; b && (r = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (n + 1 == cap)
            b = realloc(b, cap *= 2);
    }
    fclose(f);
    if (b)
        b[n] = 0;
    return b;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* run evaluates src once in a fresh runtime; it returns the CPU ms and sets *result (malloc'd)
 * to the tool's value as JSON, or to the error. */
static double run(const char *src, char **result) {
    JSRuntime *rt = JS_NewRuntime();
    JSContext *ctx = JS_NewContext(rt);
    double t0 = cpu_ms();
    JSValue v = JS_Eval(ctx, src, strlen(src), "tool.js", JS_EVAL_TYPE_GLOBAL);
    JSContext *job;
    while (JS_ExecutePendingJob(rt, &job) > 0) {
    }
    double took = cpu_ms() - t0;
    int failed = JS_IsException(v);
    if (failed) {
        JS_FreeValue(ctx, v);
        v = JS_GetException(ctx);
    } else {
        JSValue global = JS_GetGlobalObject(ctx);
        JS_FreeValue(ctx, v);
        v = JS_GetPropertyStr(ctx, global, "__result");
        JS_FreeValue(ctx, global);
    }
    const char *s = JS_ToCString(ctx, v);
    if (!s)
        s = JS_ToCString(ctx, JS_NewString(ctx, "error: no result"));
    *result = malloc(strlen(s) + 8);
    sprintf(*result, "%s%s", failed ? "error: " : "", s);
    JS_FreeCString(ctx, s);
    JS_FreeValue(ctx, v);
    JS_FreeContext(ctx);
    JS_FreeRuntime(rt);
    return took;
}

int main(int argc, char **argv) {
    int runs = argc == 3 ? atoi(argv[2]) : 0;
    char *body = argc == 3 ? read_file(argv[1]) : NULL;
    if (runs < 1 || !body) {
        fprintf(stderr, "usage: %s TOOL.js RUNS (RUNS >= 1)\n", argv[0]);
        return 2;
    }
    static const char head[] = "(async function (input) {\n";
    static const char tail[] = "\n})(null).then((v) => { globalThis.__result = JSON.stringify(v === undefined ? null : v); },"
                               " (e) => { globalThis.__result = \"error: \" + e; });";
    char *src = malloc(sizeof head + strlen(body) + sizeof tail);
    strcpy(src, head);
    strcat(src, body);
    strcat(src, tail);

    double *ms = calloc((size_t)runs, sizeof *ms);
    char *result = NULL;
    for (int i = 0; i < runs; i++) {
        free(result);
        ms[i] = run(src, &result);
    }
    qsort(ms, (size_t)runs, sizeof *ms, by_value);
    printf("%s\t%.3f\n", result, ms[runs / 2]);
    return strncmp(result, "error: ", 7) == 0;
}
