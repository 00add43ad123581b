//go:build wasip1 && !plimsoll_extism

package plimsoll

// An Extism plugin built on this package needs the build tag plimsoll_extism, which leaves
// preamble/go's plimsoll imports out of the plugin: build with -tags plimsoll_extism.
var _ = build_with_tags_plimsoll_extism
