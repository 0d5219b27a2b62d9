// Go workload with known hot functions: main.funcB does 3 units of work for
// each of main.funcA's 1 (75% and 25%), so that a profile splits 3:1 and
// pprof -list main.funcB shows its loop's lines.
// Usage: gowork SECONDS. Prints "ready" once running.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

const unit = 200000

var sink uint64

//go:noinline
func funcA(units int) {
	x := sink
	for i := 0; i < units*unit; i++ {
		x += uint64(i) ^ (x >> 3)
	}
	sink = x
}

//go:noinline
func funcB(units int) {
	x := sink
	for i := 0; i < units*unit; i++ {
		x += uint64(i) ^ (x >> 3)
	}
	sink = x
}

func main() {
	seconds := 3.0
	if len(os.Args) > 1 {
		if s, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = s
		}
	}
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	fmt.Println("ready")
	for seed := uint32(1); time.Now().Before(end); {
		// Rounds of 1 to 4 times the 3:1 (see split.c).
		seed = seed*1103515245 + 12345
		k := 1 + int(seed%4)
		funcB(3 * k)
		funcA(k)
	}
}
