// Command abigen writes the ABI's generated constants for guest runtimes in other languages.
//
//	go run github.com/plimsoll/plimsoll/abi/cmd/abigen -c FILE
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/plimsoll/plimsoll/abi"
)

func main() {
	out := flag.String("c", "", "write the C header to this file")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: abigen -c FILE")
		os.Exit(2)
	}
	if err := os.WriteFile(*out, abi.CHeader(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "abigen:", err)
		os.Exit(1)
	}
}
