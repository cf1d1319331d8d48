package shell

import (
	"math"
	"testing"
	"time"

	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/partitionlimit"
	"github.com/kvnode/kvnode/schema"
	"github.com/kvnode/kvnode/scopelimit"
)

// TestLearnerLabelsStopAtMaxLabel: the learned table keeps labels up to partitionlimit.MaxLabel
// apart, so the learner hands out the last one and then learns nothing of a new pair (its
// operations go to the replicas) rather than give it another pair's counter.
func TestLearnerLabelsStopAtMaxLabel(t *testing.T) {
	l, err := newLearner(time.Now)
	if err != nil {
		t.Fatal(err)
	}
	l.next = partitionlimit.MaxLabel - 1
	a := &schema.Table{ID: 1, Keyspace: "ks", Name: "a"}
	b := &schema.Table{ID: 2, Keyspace: "ks", Name: "b"}
	if st, ok := l.state(a, coordinator.OpWrite); !ok || st.label != partitionlimit.MaxLabel {
		t.Fatalf("the last label: %+v, %v, want label %d", st, ok, partitionlimit.MaxLabel)
	}
	if st, ok := l.state(b, coordinator.OpWrite); ok {
		t.Errorf("a pair past MaxLabel got %+v, want none", st)
	}
	if l.hot(b, coordinator.OpWrite, 1, time.Now()) {
		t.Error("a pair without a label reads as hot, want not (its operations go to the replicas)")
	}
	if _, ok := l.state(a, coordinator.OpWrite); !ok {
		t.Error("the pair with the last label lost it")
	}
}

// TestScopeLabelsFitTheLimiter: every budget's label, kind << 8 | op, is at most
// partitionlimit.MaxLabel, which a Table keeps apart.
func TestScopeLabelsFitTheLimiter(t *testing.T) {
	if got := scopeLabel(scopelimit.Kind(math.MaxUint8), coordinator.Op(math.MaxUint8)); got > partitionlimit.MaxLabel {
		t.Errorf("the largest scope label is %d, want at most MaxLabel %d", got, partitionlimit.MaxLabel)
	}
}
