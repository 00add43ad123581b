package abi

import (
	"fmt"
	"strings"
)

// CHeader renders the ABI as a C header for guest runtimes written in C. The output depends only
// on this package, so a committed copy can be compared byte for byte (go generate rewrites it).
func CHeader() []byte {
	var b strings.Builder
	b.WriteString("/* Code generated from github.com/plimsoll/plimsoll/abi by abi/cmd/abigen. DO NOT EDIT. */\n")
	b.WriteString("#ifndef PLIMSOLL_ABI_H\n#define PLIMSOLL_ABI_H\n\n")
	fmt.Fprintf(&b, "#define ABI_VERSION %d\n\n", Version)
	b.WriteString("/* The import module and its functions (preamble/ABI.md). */\n")
	fmt.Fprintf(&b, "#define ABI_MODULE %q\n", Module)
	for _, f := range Funcs {
		fmt.Fprintf(&b, "#define ABI_FN_%s %q /* (%s) -> %s, since v%d */\n",
			strings.ToUpper(f.Name), f.Name, strings.Join(f.ParamNames, ", "), strings.Join(f.ResultNames, ", "), f.Since)
	}
	b.WriteString("\n/* Negative results; a non-negative result is a length or an id. */\n")
	for _, c := range Codes {
		fmt.Fprintf(&b, "#define ABI_%s (%d) /* %s */\n", c.Name, c.Value, c.Doc)
	}
	fmt.Fprintf(&b, "#define ABI_WAIT_FOREVER 0x%xu /* host_wait's timeout_ms: until a call completes or the run ends */\n", WaitForever)
	b.WriteString("\n/* Results of a reactor's run(). */\n")
	fmt.Fprintf(&b, "#define ABI_RUN_OK %d\n#define ABI_RUN_FAILED %d\n#define ABI_RUN_LIMITED %d\n\n",
		ExitOK, ExitFailed, ExitLimited)
	b.WriteString("/* Outcomes, and the header on the broker's own answers that names them. */\n")
	fmt.Fprintf(&b, "#define ABI_OUTCOME_HEADER %q\n", OutcomeHeader)
	for _, o := range Outcomes {
		fmt.Fprintf(&b, "#define ABI_OUTCOME_%s %q\n", strings.ToUpper(o), o)
	}
	b.WriteString("\n#endif\n")
	return []byte(b.String())
}
