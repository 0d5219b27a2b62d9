// A Go program with its own C code (cgo): linked by the C linker, whose
// .text starts with C code before runtime.text, which Go's line table is
// relative to (tests/unit/test_symbols.c reads its lines; never run).
package main

// static int twice(int x) { return 2 * x; }
import "C"
import "os"

//go:noinline
func half(x int) int {
	y := int(C.twice(C.int(x)))
	return y / 4
}

func main() {
	os.Exit(half(len(os.Args)))
}
