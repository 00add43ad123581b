package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/plimsoll/plimsoll/conformance"
)

const conformanceSynopsis = "plimsoll-run conformance [--lang js|go|extism-go|python | --guest DRIVER.wasm|.js|.py] [--scenarios DIR] [--json] [--run REGEXP] [--parallel N]"

// cmdConformance runs the guest preamble conformance suite against one driver, or against every
// built-in driver, and prints one table per driver (or one JSON document). Exit codes: 0 every
// scenario passed; 1 one failed; 2 usage, an unreadable driver or a broken scenario.
func cmdConformance(ctx context.Context, args []string, e env) int {
	fs := newFlags("conformance", conformanceSynopsis, e)
	lang := fs.String("lang", "", "run the built-in driver for `LANG`: js, go, extism-go or python (default: all)")
	guest := fs.String("guest", "", "run this driver `FILE`: a .wasm guest, or a .js tool on the JS runtime")
	dir := fs.String("scenarios", "", "load the scenarios of `DIR` (default: the built-in suite, conformance/v1)")
	asJSON := fs.Bool("json", false, "print a JSON document with every difference instead of tables")
	only := fs.String("run", "", "run only the scenarios whose name matches `REGEXP`")
	parallel := fs.Int("parallel", 2, "run `N` scenarios at once")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "plimsoll-run conformance: %v\n", err)
		return exitConfig
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *lang != "" && *guest != "" {
		return fail(errors.New("give --lang or --guest, not both"))
	}
	if *parallel < 1 {
		return fail(fmt.Errorf("--parallel %d must be at least 1", *parallel))
	}

	var drivers []conformance.Driver
	switch {
	case *guest != "":
		d, err := conformance.DriverFile(*guest)
		if err != nil {
			return fail(err)
		}
		drivers = append(drivers, d)
	default:
		langs := conformance.Languages
		if *lang != "" {
			langs = []string{*lang}
		}
		for _, l := range langs {
			d, err := conformance.BuiltinDriver(l)
			if err != nil {
				return fail(err)
			}
			drivers = append(drivers, d)
		}
	}

	var scenarios []*conformance.Scenario
	var err error
	if *dir != "" {
		scenarios, err = conformance.LoadDir(*dir)
	} else {
		scenarios, err = conformance.Builtin()
	}
	if err != nil {
		return fail(err)
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return fail(fmt.Errorf("--run: %v", err))
		}
		var kept []*conformance.Scenario
		for _, s := range scenarios {
			if re.MatchString(s.Name) {
				kept = append(kept, s)
			}
		}
		if len(kept) == 0 {
			return fail(fmt.Errorf("--run %q matches no scenario", *only))
		}
		scenarios = kept
	}
	if err := conformance.Check(scenarios); err != nil {
		return fail(err)
	}

	r, err := conformance.New(ctx, conformance.Options{CacheDir: e.getenv("PLIMSOLL_CACHE_DIR"), Parallel: *parallel})
	if err != nil {
		return fail(err)
	}
	defer r.Close(context.Background())

	code := exitOK
	var reports []conformance.Report
	for i, d := range drivers {
		// Progress on stderr: a driver's scenarios can take a minute on a busy machine.
		fmt.Fprintf(e.stderr, "plimsoll-run conformance: driver %s (%d of %d): running %d scenarios, %d at once\n",
			d.Name, i+1, len(drivers), len(scenarios), *parallel)
		rep := r.Run(ctx, d, scenarios)
		reports = append(reports, rep)
		if !rep.OK() {
			code = exitTool
		}
		if !*asJSON {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			conformance.WriteTable(e.stdout, rep)
		}
	}
	if *asJSON {
		conformance.WriteJSON(e.stdout, reports)
	}
	return code
}
