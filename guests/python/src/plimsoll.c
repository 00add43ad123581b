/* plimsoll's Python guest: CPython 3.13 built as a wasip1 reactor (guest ABI v2, preamble/ABI.md).
 *
 *   _initialize  starts the interpreter (isolated: no site, no environment, no arguments; modules
 *                from /lib/plimsoll and /lib/python313.zip, a read-only mount the host gives) and
 *                imports _plimsoll_engine, which imports the modules tools use and runs a trivial
 *                tool once, so the host's snapshot of initialised memory holds all of it;
 *   run() -> i32 calls _plimsoll_engine.run(), which reads the run's request on stdin, runs the
 *                tool and writes its result on stdout (see guests/python/doc.go): 0 ok, 1 the tool
 *                failed, 2 a guest-side limit (the last log line says which).
 *
 * _plimsoll is the builtin bridge to the host: the plimsoll imports, and the run's deadline,
 * which can be set once per instance and never cleared (an instance serves one run). The build
 * inserts a call of plimsoll_tick into every loop of the module (guests/internal/wasmbuild), so a
 * runaway ends at the deadline wherever it spins, in Python or in C, and no Python code can catch
 * that. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wasi/api.h>

#include "abi.h"

#define LIMIT_DEADLINE "run deadline passed (stopped by the engine)"

#define IMPORT(name) __attribute__((import_module(ABI_MODULE), import_name(name)))
IMPORT(ABI_FN_HOST_CALL) int32_t abi_host_call(uint32_t req, uint32_t req_len, uint32_t resp, uint32_t cap);
IMPORT(ABI_FN_HOST_RESPONSE) int32_t abi_host_response(uint32_t ptr, uint32_t cap);
IMPORT(ABI_FN_HOST_SUBMIT) int32_t abi_host_submit(uint32_t req, uint32_t req_len);
IMPORT(ABI_FN_HOST_WAIT) int32_t abi_host_wait(uint32_t ids, uint32_t ids_cap, uint32_t timeout_ms);
IMPORT(ABI_FN_HOST_RESULT) int32_t abi_host_result(int32_t id, uint32_t ptr, uint32_t cap);

#define PTR(p) ((uint32_t)(uintptr_t)(p))

static double deadline_ms; /* wall clock, ms since the epoch; 0 for none */
static int armed;          /* the deadline is set (once per instance) */
static char setup_error[512];
static PyObject *engine_run;

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void log_str(const char *s) { write_all(2, s, strlen(s)); }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* plimsoll_tick is called from every loop of the module once per LOOP_TICK_INTERVAL iterations
 * (the build inserts the calls). It hands the processor back now and then (the host cannot
 * preempt wasm code), and ends the instance once the deadline has passed: it cannot unwind the
 * interpreter from an arbitrary C frame, and the instance serves one run. The host's clock jumps
 * past any deadline when the run is canceled or the runtime closes. */
__attribute__((export_name("plimsoll_tick"))) void plimsoll_tick(void) {
    sched_yield();
    if (!armed || deadline_ms <= 0 || now_ms() < deadline_ms)
        return;
    log_str("\nplimsoll: limit: " LIMIT_DEADLINE "\n");
    __wasi_proc_exit(ABI_RUN_LIMITED);
}

/* ---- the _plimsoll module ---- */

#define RESP_CAP (64 << 10)
static char resp_buf[RESP_CAP];

static PyObject *abi_error(const char *fn, int32_t code) {
    return PyErr_Format(PyExc_RuntimeError, "plimsoll: %s returned %d", fn, (int)code);
}

/* arm(deadline_ms) sets the run's deadline; 0 means none. It works once per instance. */
static PyObject *py_arm(PyObject *self, PyObject *arg) {
    if (armed)
        return PyErr_Format(PyExc_PermissionError, "_plimsoll.arm: the run's deadline is set and cannot change");
    double d = PyFloat_AsDouble(arg);
    if (d == -1.0 && PyErr_Occurred())
        return NULL;
    deadline_ms = d;
    armed = 1;
    Py_RETURN_NONE;
}

/* fetch returns n bytes of a response: from resp_buf when they fit, else read again by more. */
static PyObject *fetch(int32_t n, int32_t (*more)(int32_t, uint32_t, uint32_t), int32_t id, const char *fn) {
    if (n < 0)
        return abi_error(fn, n);
    if (n <= RESP_CAP)
        return PyBytes_FromStringAndSize(resp_buf, n);
    PyObject *b = PyBytes_FromStringAndSize(NULL, n);
    if (!b)
        return NULL;
    int32_t m = more(id, PTR(PyBytes_AS_STRING(b)), (uint32_t)n);
    if (m != n) {
        Py_DECREF(b);
        return abi_error(fn, m);
    }
    return b;
}

static int32_t response_more(int32_t id, uint32_t ptr, uint32_t cap) { return abi_host_response(ptr, cap); }

/* call(envelope) -> response envelope: one call, ABI v1. */
static PyObject *py_call(PyObject *self, PyObject *arg) {
    Py_buffer req;
    if (PyObject_GetBuffer(arg, &req, PyBUF_SIMPLE) < 0)
        return NULL;
    int32_t n = abi_host_call(PTR(req.buf), (uint32_t)req.len, PTR(resp_buf), RESP_CAP);
    PyBuffer_Release(&req);
    return fetch(n, response_more, 0, "host_call");
}

/* submit(envelope) -> id, or ABI_ERR_INFLIGHT (negative) when limits.max_inflight are held. */
static PyObject *py_submit(PyObject *self, PyObject *arg) {
    Py_buffer req;
    if (PyObject_GetBuffer(arg, &req, PyBUF_SIMPLE) < 0)
        return NULL;
    int32_t id = abi_host_submit(PTR(req.buf), (uint32_t)req.len);
    PyBuffer_Release(&req);
    if (id < 0 && id != ABI_ERR_INFLIGHT)
        return abi_error("host_submit", id);
    return PyLong_FromLong(id);
}

/* wait(timeout_ms) -> [id, ...]: calls completed since the last wait; timeout_ms < 0 waits
 * until one completes or the run ends. */
static PyObject *py_wait(PyObject *self, PyObject *arg) {
    long timeout = PyLong_AsLong(arg);
    if (timeout == -1 && PyErr_Occurred())
        return NULL;
    uint32_t ids[64];
    int32_t n = abi_host_wait(PTR(ids), sizeof ids, timeout < 0 ? ABI_WAIT_FOREVER : (uint32_t)timeout);
    if (n < 0)
        return abi_error("host_wait", n);
    PyObject *list = PyList_New(n);
    for (int32_t i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLong(ids[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

/* result(id) -> response envelope of a completed call. */
static PyObject *py_result(PyObject *self, PyObject *arg) {
    long id = PyLong_AsLong(arg);
    if (id == -1 && PyErr_Occurred())
        return NULL;
    int32_t n = abi_host_result((int32_t)id, PTR(resp_buf), RESP_CAP);
    return fetch(n, abi_host_result, (int32_t)id, "host_result");
}

/* sleep(seconds): a relative sleep on the WASI clock, which the host ends at the run's deadline.
 * It replaces time.sleep: CPython's sleeps until an absolute time (clock_nanosleep with
 * TIMER_ABSTIME), which wazero's poll_oneoff does not support. */
static PyObject *py_sleep(PyObject *self, PyObject *arg) {
    double s = PyFloat_AsDouble(arg);
    if (s == -1.0 && PyErr_Occurred())
        return NULL;
    if (!(s >= 0))
        return PyErr_Format(PyExc_ValueError, "sleep length must be a non-negative number");
    if (s > 1e9)
        s = 1e9; /* about 31 years: the run's deadline comes long before */
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"arm", py_arm, METH_O, "arm(deadline_ms): set the run's deadline, once."},
    {"call", py_call, METH_O, "call(envelope) -> response envelope (one call at a time)."},
    {"submit", py_submit, METH_O, "submit(envelope) -> id, or a negative id when max_inflight calls are held."},
    {"wait", py_wait, METH_O, "wait(timeout_ms) -> ids of completed calls; timeout_ms < 0: no timeout."},
    {"result", py_result, METH_O, "result(id) -> response envelope of a completed call."},
    {"sleep", py_sleep, METH_O, "sleep(seconds): sleep on the host's clock, ended at the run's deadline."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_plimsoll", "plimsoll's bridge to the host (guest ABI v2).", -1, methods,
};

static PyObject *PyInit__plimsoll(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "ERR_INFLIGHT", ABI_ERR_INFLIGHT) < 0)
        Py_CLEAR(m);
    return m;
}

/* ---- start-up and run ---- */

static void fail_setup(const char *what) {
    PyObject *exc = PyErr_GetRaisedException();
    PyObject *s = exc ? PyObject_Str(exc) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    snprintf(setup_error, sizeof setup_error, "plimsoll: the Python engine failed to start: %s: %s\n", what,
             msg ? msg : "(no message)");
    Py_XDECREF(s);
    Py_XDECREF(exc);
    PyErr_Clear();
}

static int set_config(PyConfig *c) {
    PyStatus st;
#define CHECK(x)                                                                                                   \
    do {                                                                                                           \
        st = (x);                                                                                                  \
        if (PyStatus_Exception(st))                                                                                \
            return -1;                                                                                             \
    } while (0)
    c->site_import = 0;
    c->write_bytecode = 0;
    c->install_signal_handlers = 0;
    c->buffered_stdio = 0; /* a run that ends at its deadline keeps everything it logged */
    c->pathconfig_warnings = 0;
    c->module_search_paths_set = 1;
    CHECK(PyWideStringList_Append(&c->module_search_paths, L"/lib/plimsoll"));
    CHECK(PyWideStringList_Append(&c->module_search_paths, L"/lib/python313.zip"));
    CHECK(PyConfig_SetString(c, &c->program_name, L"python"));
    CHECK(PyConfig_SetString(c, &c->home, L"/lib"));
    CHECK(PyConfig_SetString(c, &c->stdio_encoding, L"utf-8"));
    CHECK(PyConfig_SetString(c, &c->stdio_errors, L"backslashreplace"));
#undef CHECK
    return 0;
}

__attribute__((constructor)) static void init(void) {
    PyPreConfig pre;
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.utf8_mode = 1;
    if (PyStatus_Exception(Py_PreInitialize(&pre))) {
        snprintf(setup_error, sizeof setup_error, "plimsoll: the Python engine failed to pre-initialise\n");
        return;
    }
    if (PyImport_AppendInittab("_plimsoll", PyInit__plimsoll) < 0) {
        snprintf(setup_error, sizeof setup_error, "plimsoll: the Python engine could not add _plimsoll\n");
        return;
    }
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    int bad = set_config(&config);
    PyStatus st = bad ? PyStatus_Error("config") : Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        snprintf(setup_error, sizeof setup_error, "plimsoll: the Python interpreter failed to start: %s\n",
                 st.err_msg ? st.err_msg : "(no message)");
        return;
    }
    PyObject *engine = PyImport_ImportModule("_plimsoll_engine");
    if (!engine) {
        fail_setup("import _plimsoll_engine");
        return;
    }
    engine_run = PyObject_GetAttrString(engine, "run");
    Py_DECREF(engine);
    if (!engine_run)
        fail_setup("_plimsoll_engine.run");
}

__attribute__((export_name("run"))) int32_t run(void) {
    if (setup_error[0]) {
        log_str(setup_error);
        return ABI_RUN_FAILED;
    }
    PyObject *r = PyObject_CallNoArgs(engine_run);
    if (!r) {
        PyErr_Print();
        return ABI_RUN_FAILED;
    }
    long code = PyLong_AsLong(r);
    Py_DECREF(r);
    return code == ABI_RUN_OK || code == ABI_RUN_LIMITED ? (int32_t)code : ABI_RUN_FAILED;
}
