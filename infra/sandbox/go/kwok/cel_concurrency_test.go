package tools

import (
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	kwokcel "sigs.k8s.io/kwok/pkg/utils/cel"
)

// Guards ../patches/github.com/wzshiming/easycel@v0.6.0.patch.
//
// kwok builds a CEL environment per stage from several workers at once right after it starts, and
// easycel fills its process-wide type caches on first use only: each process has one chance to hit
// the race, which aborts it with "fatal error: concurrent map writes". So the test re-runs itself
// as fresh processes. Unpatched, about 2 % of them abort (22 of 1000 on a 2-core machine), so 1000
// clean runs leave a chance of about 1e-9 that the race is back and unseen.
const (
	childEnv = "OUTPOST_CEL_CONCURRENCY_CHILD"
	runs     = 1000
	workers  = 64
)

func TestCELEnvironmentsSurviveConcurrentFirstUse(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		buildEnvironmentsAtOnce(t)
		return
	}
	for i := 1; i <= runs; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCELEnvironmentsSurviveConcurrentFirstUse$", "-test.count=1")
		// More threads than cores widen the window, as kwok's many workers do.
		cmd.Env = append(os.Environ(), childEnv+"=1", "GOMAXPROCS=8")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d of %d: %v\n%s", i, runs, err, head(string(out), 12))
		}
	}
}

// buildEnvironmentsAtOnce does what kwok's stage workers do on start: every worker builds an
// environment from the default types, released together so their first uses overlap.
func buildEnvironmentsAtOnce(t *testing.T) {
	var ready, done sync.WaitGroup
	ready.Add(1)
	errs := make(chan error, workers)
	for range workers {
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Wait()
			_, err := kwokcel.NewEnvironment(kwokcel.EnvironmentConfig{
				Types:       slices.Clone(kwokcel.DefaultTypes),
				Conversions: slices.Clone(kwokcel.DefaultConversions),
				Funcs:       maps.Clone(kwokcel.DefaultFuncs),
				Methods:     maps.Clone(kwokcel.FuncsToMethods(kwokcel.DefaultFuncs)),
			})
			errs <- err
		}()
	}
	ready.Done()
	done.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("building a CEL environment: %v", err)
		}
	}
}

func head(s string, lines int) string {
	parts := strings.SplitN(s, "\n", lines+1)
	return strings.Join(parts[:min(len(parts), lines)], "\n")
}
