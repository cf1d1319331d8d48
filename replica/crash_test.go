package replica

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kvnode/kvnode/proto/replicapb"
	"github.com/kvnode/kvnode/schema"
)

// crashDirEnv names the store directory of TestCrashChild; TestCrashRecovery
// sets it when it runs the test binary as a child process.
const crashDirEnv = "KVNODE_REPLICA_CRASH_TEST_DIR"

// crashPartitions spreads the child's writes over a few partitions.
const crashPartitions = 7

// crashMutation is write i of the crash test: row (i, "r") of partition
// p<i mod crashPartitions>, with v = i at timestamp i+1.
func crashMutation(i int) *replicapb.Mutation {
	return mut(fmt.Sprintf("p%d", i%crashPartitions), row(int32(i), "r", fmt.Sprintf("marker@%d", i+1), fmt.Sprintf("v=%d@%d", i, i+1)))
}

// TestCrashChild is the child process of TestCrashRecovery: it writes
// mutations to the store in $KVNODE_REPLICA_CRASH_TEST_DIR and prints
// "ack <i>" after each Apply returns, until it is killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child process of TestCrashRecovery")
	}
	// A small memtable makes the child flush while it writes, so kills land
	// during flushes and compactions too.
	s, err := Open(dir, Options{CacheSize: 8 << 20, MemTableSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	tbl := testTable(t)
	for i := range 1_000_000 {
		if err := s.Apply(tbl, crashMutation(i)); err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
		if _, err := fmt.Fprintf(os.Stdout, "ack %d\n", i); err != nil {
			t.Fatalf("writing ack %d: %v", i, err)
		}
	}
	t.Fatal("not killed after a million writes")
}

// TestCrashRecovery runs TestCrashChild in a child process, kills it with
// SIGKILL after a random number of acknowledged writes, reopens the store
// and checks that every write the child acknowledged is there.
func TestCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	killAfter := 1 + rand.IntN(2000)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := -1 // the highest acknowledged write; acks arrive in order
	lines := bufio.NewScanner(stdout)
	killed := false
	for lines.Scan() {
		text, ok := strings.CutPrefix(lines.Text(), "ack ")
		if !ok {
			continue // test framework output
		}
		i, err := strconv.Atoi(text)
		if err != nil || i != acked+1 {
			t.Fatalf("the child printed %q after ack %d, want ack %d", lines.Text(), acked, acked+1)
		}
		acked = i
		if !killed && acked+1 >= killAfter {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("killing the child: %v", err)
			}
			killed = true
			// Keep reading: acks already in the pipe were printed after
			// their write was durable, so they count too.
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v after %d acks, want killed by SIGKILL; its stderr:\n%s", err, acked+1, stderr.String())
	}
	t.Logf("killed the child after %d acks (target %d)", acked+1, killAfter)

	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopening the store after the crash: %v", err)
	}
	defer s.Close()
	tbl := testTable(t)
	found := make(map[int32]bool)
	for p := range crashPartitions {
		resp, err := s.ReadPartition(tbl, readReq(fmt.Sprintf("p%d", p)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.Rows {
			i := int32FromBytes(r.Clustering[0])
			if len(r.Cells) != 1 || int32FromBytes(r.Cells[0].Value) != i || r.Cells[0].Timestamp != int64(i)+1 || r.GetMarker() != int64(i)+1 {
				t.Errorf("row %d after the crash is %v, want marker and v=%d at timestamp %d", i, r, i, i+1)
			}
			found[i] = true
		}
	}
	for i := range acked + 1 {
		if !found[int32(i)] {
			t.Errorf("acknowledged write %d (of %d) is missing after the crash", i, acked+1)
		}
	}
}

func int32FromBytes(b []byte) int32 {
	v, err := schema.TypeInt.Decode(b)
	if err != nil {
		return -1
	}
	return v.(int32)
}
