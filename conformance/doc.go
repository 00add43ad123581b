// Package conformance runs the guest preamble conformance suite: scenarios stored as data
// (v1/*.yaml, documented in v1/README.md) that every preamble must pass, through a driver
// written in the preamble's language (the contract is in preamble/README.md).
//
// For each scenario the runner starts the scenario's upstream on loopback (scripted by call
// count, recording every request), writes the scenario's grant as a profile file and loads it with
// the profile loader, runs the driver through the real host and broker with the scenario's
// operations on stdin, and compares, in order: the run itself, the driver's observations, the call
// trace, what the upstream received, and the audit counters. A scenario passes when nothing
// differs; each difference reads "expected … , observed …".
//
//	r, _ := conformance.New(ctx, conformance.Options{})
//	defer r.Close(ctx)
//	scenarios, _ := conformance.V1()
//	report := r.Run(ctx, conformance.JSDriver(), scenarios)
//	conformance.WriteTable(os.Stdout, report)
//
// Built-in drivers: JSDriver (drivers/js/driver.js, on preamble/js) and GoDriver
// (drivers/go, on preamble/go, embedded as a wasip1 reactor rebuilt by guests/internal/wasmbuild),
// and ExtismGoDriver (drivers/extism-go, an Extism plugin on go-pdk and preamble/extism-go).
// DriverFile loads any other driver, a .wasm module or a .js tool.
//
// The package imports host and broker; neither imports it.
package conformance
