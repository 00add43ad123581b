// Package host runs tools as WebAssembly guests in wazero, one fresh module instance per run,
// with every call out going through the run's broker.
//
// A Runtime compiles the JavaScript runtime (guests/quickjs) once, with wazero's compiler engine and a
// file compilation cache, and defines the WASI and plimsoll host modules once. Run then:
//
//   - waits for one of Options.MaxConcurrent slots (or for its context);
//   - resolves the profile's credential and starts a broker run;
//   - takes a pre-initialised JavaScript instance from the pool, or instantiates a fresh one
//     (for JavaScript, restored to the state after _initialize: see "The JS runtime's snapshot");
//   - binds the instance to the run: stdin is the input (for JavaScript, the JSON request the
//     runtime reads), stdout and stderr are captured up to their caps, sleeps end at the run's
//     deadline, memory may grow up to limits.memory;
//   - calls run (a reactor) or _start (a command) with a context that carries the host-function
//     state (hostfuncs.WithSession) and ends at limits.run_timeout or the caller's deadline;
//   - closes the instance, and returns the output, log, trace and exactly one audit.
//
// The guest sees no filesystem, arguments or environment; the real wall and monotonic clocks;
// crypto randomness; and sleeps that really sleep but end at the run deadline.
//
// # Kinds of tool
//
// A Tool is one kind's: JavaScript (JSTool) and Python (PythonTool) source run on engines the
// host embeds, a wasip1 module of the tool's own (WasmTool), an Extism plugin (ExtismTool).
// Kinds lists them, each with the language and file extensions it answers to; ToolFromSource and
// ReadTool build a tool from bytes by its name's extension (KindFor), and a run request's
// language finds its kind with KindForLanguage. Each kind is registered once, in kind.go.
//
// # Statuses and errors
//
// Result.Err is mapped to the audit status in one place (statusOf):
//
//	ok       nil
//	error    *ToolError    the tool threw, returned or exited non-zero, or trapped; Message is the
//	                       reason it logged last (a JS "Uncaught ..." and its stack, a Go "panic: ...")
//	         *SetupError   (ErrSetup) no profile, credential unresolvable, preamble unreadable, input
//	                       not JSON, module does not compile, imports something not provided
//	                       (*hostfuncs.ImportError), has no entry point
//	         ErrCancel     the caller canceled the context (also matches context.Canceled)
//	         ErrClosed     the Runtime was closed before or during the run
//	timeout  *TimeoutError (ErrTimeout, context.DeadlineExceeded) limits.run_timeout passed, or the
//	                       caller's deadline did first (Limit is then "")
//	limit    *LimitError   (ErrLimit) Limit names it: limits.memory (a memory.grow was refused and
//	                       the guest then died: reported as a memory limit, never as "unreachable";
//	                       also a limit below the module's declared minimum), limits.max_output_bytes,
//	                       limits.max_log_bytes, limits.max_host_calls, or "guest" when the JS
//	                       runtime stops itself (call-stack depth; its run returns 2)
//
// Going over an output or log cap keeps what fit, fails the guest's write and ends the run at
// once. Going over max_host_calls closes the module from inside host_call.
//
// # Memory limits and the pool
//
// wazero's memory limit (RuntimeConfig.WithMemoryLimitPages) belongs to the runtime and is baked
// into compiled code, so it cannot differ per profile without compiling the JS runtime once per
// limit. Instead each instance's memory is allocated by the host (experimental.MemoryAllocator),
// which refuses growth past the run's limits.memory. That also tells an out-of-memory trap apart
// from any other. On Linux that memory is an anonymous mapping reserved up to the limit
// (MAP_NORESERVE): growth never copies, untouched pages cost nothing, and it stays off the Go heap
// (with it on the heap, a live JS run cost about 26 MiB of RSS instead of 15).
//
// # The JS runtime's snapshot
//
// The JS engine's _initialize (QuickJS-ng's runtime and context, engine.js, the generic preamble)
// costs guest CPU and gives every instance the same state: it reads no input, makes no
// host call and draws no randomness a tool can see. So when the runtime is first compiled, the
// host runs _initialize once in a template instance and keeps the resulting memory image and the
// values of the module's mutable globals (exported for that purpose when the module is loaded).
// The module compiled for runs has no data section: the image holds that data. Every JS instance
// is instantiated as usual, with its own memory reserved up to its own limit, and then gets the
// image and the globals instead of running _initialize. On Linux the image is a sealed memfd
// mapped copy-on-write at the start of the instance's memory: pages a run only reads stay shared,
// a page is copied when the run first writes to it, and pages it never touches cost nothing
// (elsewhere the image is copied in). A memory limit below the image's size is reported as a
// memory limit, as when _initialize ran out. Instances share the Go runtime's internal
// (non-cryptographic) random seed; Math.random and crypto randomness read WASI random_get in
// each instance when they are used. The template never runs a tool and no instance can write to
// the image, so nothing flows from one run into another.
//
// Pooled instances (Options.PoolSize) are instantiated and initialised in the background with no
// memory limit, and take the run's limit when a run binds them. The filler waits (up to 10 ms)
// for executing runs to finish before it prepares the next instance: instantiating competes with
// the guest for the CPU, and on a 2-core machine made a pooled run 0.8 ms slower. A pooled
// instance whose memory is already larger than the run's limit is not used: the run gets a fresh
// instance instead, which then fails as it would have anyway. Every pooled instance serves one run and is closed.
package host
