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
	b.WriteString("#ifndef PLIMSOLL_ABI_H\n#define PLIMSOLL_ABI_H\n\n#include <stdint.h>\n\n")
	fmt.Fprintf(&b, "#define ABI_VERSION %d\n", Version)
	fmt.Fprintf(&b, "#define ABI_MODULE %q\n\n", Module)
	b.WriteString("/* Return codes of host_call and host_response; a non-negative return is a length. */\n")
	for _, c := range Codes {
		fmt.Fprintf(&b, "#define ABI_%s (%d) /* %s */\n", c.Name, c.Value, c.Doc)
	}
	b.WriteString("\n/* Results of run(). */\n")
	fmt.Fprintf(&b, "#define ABI_EXIT_OK %d\n#define ABI_EXIT_FAILED %d\n#define ABI_EXIT_LIMITED %d\n\n",
		ExitOK, ExitFailed, ExitLimited)
	fmt.Fprintf(&b, "#define ABI_WAIT_FOREVER 0x%xu /* host_wait's timeout_ms: until a call completes or the run ends */\n\n", WaitForever)
	fmt.Fprintf(&b, "#define ABI_OUTCOME_HEADER %q\n", OutcomeHeader)
	for _, o := range Outcomes {
		fmt.Fprintf(&b, "#define ABI_OUTCOME_%s %q\n", strings.ToUpper(o), o)
	}
	b.WriteString("\n/* The plimsoll import module. */\n")
	for _, f := range Funcs {
		fmt.Fprintf(&b, "__attribute__((import_module(%q), import_name(%q)))\n", Module, f.Name)
		fmt.Fprintf(&b, "int32_t plimsoll_%s(%s);\n", f.Name, cParams(f))
	}
	b.WriteString("\n#endif\n")
	return []byte(b.String())
}

func cParams(f Func) string {
	ps := make([]string, len(f.Params))
	for i := range f.Params {
		ps[i] = "uint32_t " + f.ParamNames[i] // i32 is the only type; pointers and lengths are unsigned
	}
	return strings.Join(ps, ", ")
}
