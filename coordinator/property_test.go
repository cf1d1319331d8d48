package coordinator

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestRequestProperties runs checkRequest on many random scripts; FuzzRequest explores further
// with `go test ./coordinator -fuzz FuzzRequest`.
func TestRequestProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 5000
	if testing.Short() {
		n = 500
	}
	for range n {
		script := make([]byte, rng.IntN(64))
		for i := range script {
			script[i] = byte(rng.Uint32())
		}
		checkRequest(t, script)
		if t.Failed() {
			t.Fatalf("script %v failed", script)
		}
	}
}

func FuzzRequest(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 1, 1, 0, 0, 1, 100, 10, 0, 1, 0, 0, 0, 1, 0, 1, 1})
	f.Add([]byte{4, 0, 0, 3, 255, 1, 200, 40, 1, 0, 3, 2, 1, 0, 0, 3, 5, 1})
	f.Fuzz(checkRequest)
}

// script hands out the bytes of a fuzz input, then zeros.
type script []byte

func (s *script) next() byte {
	if len(*s) == 0 {
		return 0
	}
	b := (*s)[0]
	*s = (*s)[1:]
	return b
}

// checkRequest drives one request with choices taken from data, keeping its own model of the
// answers, and checks after every input that the request agrees with the model:
//   - sends go to distinct live replicas, as many as the op and level need (one more for a read
//     with SpeculateAlways), with the path's modes;
//   - Speculate sends once, for a read with SpeculateDelayed, one read per missing answer to
//     live replicas not yet asked, as far as there are any, with the path's modes;
//   - the request finishes exactly when the model's tally is decided, never succeeding with fewer
//     than BlockFor distinct OKs, and blaming rate limiting only when rejections alone decide;
//   - it terminates once every contacted replica answered, or at the deadline;
//   - after the outcome every input is a no-op and the outcome stays the same;
//   - unaccounted replicas are exactly the replicas that neither checked nor were sent the op.
func checkRequest(t *testing.T, data []byte) {
	s := script(data)
	rf := 1 + int(s.next()%5)
	names := make([]NodeID, rf)
	for i := range names {
		names[i] = NodeID(fmt.Sprintf("n%d", i+1))
	}
	p := Params{
		Op:          Op(1 + s.next()%2),
		Consistency: Consistency(1 + s.next()%3),
		Self:        "c",
	}
	if i := int(s.next() % byte(rf+1)); i < rf {
		p.Self = names[i]
	}
	downMask := s.next()
	for i, id := range names {
		p.Replicas = append(p.Replicas, Replica{ID: id, Down: downMask&(1<<i) != 0})
	}
	switch s.next() % 3 {
	case 1:
		p.Limit = 50
	case 2:
		p.Limit, p.Exempt = 50, true
	}
	p.Draw = float64(s.next()) / 256
	t0 := time.Unix(1_700_000_000, 0)
	p.Deadline = t0.Add(time.Duration(1+s.next()%50) * time.Millisecond)
	if s.next()%2 == 1 {
		p.ReadOrder = slices.Clone(names)
		slices.Reverse(p.ReadOrder)
	}
	p.Speculation = Speculation(s.next() % 3)
	desc := fmt.Sprintf("%+v", p)

	req, err := NewRequest(p)
	if err != nil {
		t.Fatalf("NewRequest(%s): %v", desc, err)
	}
	required := BlockFor(p.Consistency, rf)
	limited := p.Limit > 0 && !p.Exempt
	selfIsReplica := slices.Contains(names, p.Self)
	live := func(id NodeID) bool {
		return id == p.Self || !p.Replicas[slices.Index(names, id)].Down
	}
	nLive := 0
	for _, id := range names {
		if live(id) {
			nLive++
		}
	}

	var (
		sent []Send
		// replaceable says the input being applied is a first failure answer of a read at ONE
		// or QUORUM, the one case where the core may send again besides speculating.
		replaceable bool
		// speculating says the input being applied is Speculate, which may send wantSpec.
		speculating bool
		wantSpec    int
		speculated  bool
		answered    = map[int]Status{}
		checked     bool
		outcome     Outcome
		now         = t0
	)
	// checkMode checks that m is sent in the limiter mode of the request's path.
	checkMode := func(input string, m Send) {
		t.Helper()
		wantMode, wantDraw := ModeNone, 0.0
		switch {
		case !limited:
		case checked && m.To != p.Self:
			wantMode = ModeAccountOnly
		case !checked:
			wantMode, wantDraw = ModeAccountAndEnforce, p.Draw
		}
		if m.Mode != wantMode || m.Draw != wantDraw {
			t.Fatalf("%s: %s: send %+v, want mode %v with draw %v", desc, input, m, wantMode, wantDraw)
		}
	}
	asked := func(id NodeID) bool { return slices.ContainsFunc(sent, func(x Send) bool { return x.To == id }) }
	// apply checks one step against the model and records its sends and outcome.
	apply := func(input string, st Step) {
		t.Helper()
		if outcome != nil {
			if st.LocalCheck || st.Sends != nil || st.Outcome != nil || st.Unaccounted != nil {
				t.Fatalf("%s: %s after the outcome returned %+v, want an empty step", desc, input, st)
			}
			if !reflect.DeepEqual(req.Outcome(), outcome) {
				t.Fatalf("%s: %s changed the outcome from %v to %v", desc, input, outcome, req.Outcome())
			}
			return
		}
		if st.LocalCheck && !(limited && selfIsReplica) {
			t.Fatalf("%s: %s asked for a local check on the account-and-enforce path", desc, input)
		}
		if speculating {
			if len(st.Sends) != wantSpec {
				t.Fatalf("%s: %s sent %+v, want %d speculative reads", desc, input, st.Sends, wantSpec)
			}
			for _, m := range st.Sends {
				if m.Seq != len(sent)+1 || !live(m.To) || asked(m.To) {
					t.Fatalf("%s: %s: speculative read %+v has a wrong Seq, a down target or one already asked (%+v)", desc, input, m, sent)
				}
				checkMode(input, m)
				sent = append(sent, m)
			}
		} else if len(st.Sends) > 0 && sent != nil {
			// Only a read at ONE or QUORUM sends again: one replacement for a failed replica, to
			// a live replica not asked yet.
			if !replaceable || len(st.Sends) != 1 {
				t.Fatalf("%s: %s sent a second batch %+v", desc, input, st.Sends)
			}
			m := st.Sends[0]
			if m.Seq != len(sent)+1 || !live(m.To) || slices.ContainsFunc(sent, func(x Send) bool { return x.To == m.To }) {
				t.Fatalf("%s: %s: replacement %+v has a wrong Seq, a down target or one already asked (%+v)", desc, input, m, sent)
			}
			checkMode(input, m)
			sent = append(sent, m)
		} else if replaceable && outcome == nil && st.Outcome == nil {
			for _, id := range names {
				if live(id) && !slices.ContainsFunc(sent, func(x Send) bool { return x.To == id }) {
					t.Fatalf("%s: %s: a replica failed and %s was never asked, but no replacement was sent", desc, input, id)
				}
			}
		} else if len(st.Sends) > 0 {
			if limited && selfIsReplica && !checked {
				t.Fatalf("%s: %s sent before the local check", desc, input)
			}
			want := required
			if p.Op == OpWrite || p.Consistency == All {
				want = nLive
			} else if p.Speculation == SpeculateAlways {
				want = min(required+1, nLive)
			}
			if len(st.Sends) != want {
				t.Fatalf("%s: %s sent to %d replicas, want %d", desc, input, len(st.Sends), want)
			}
			seen := map[NodeID]bool{}
			for i, m := range st.Sends {
				if m.Seq != i+1 || seen[m.To] || !slices.Contains(names, m.To) || !live(m.To) {
					t.Fatalf("%s: %s: send %+v has a wrong Seq, a repeated, unknown or down target", desc, input, m)
				}
				seen[m.To] = true
				checkMode(input, m)
			}
			sent = st.Sends
		}
		var tl Tally
		tl.Contacted = len(sent)
		for _, st := range answered {
			switch st {
			case StatusOK:
				tl.OK++
			case StatusRateLimited:
				tl.Rejected++
			default:
				tl.Failed++
			}
		}
		if req.Tally() != tl {
			t.Fatalf("%s: after %s the tally is %+v, the model says %+v", desc, input, req.Tally(), tl)
		}
		decided := sent != nil && tl.Result(required) != QuorumPending
		if st.Outcome == nil {
			if decided || req.Done() {
				t.Fatalf("%s: after %s the tally %+v is decided (%v) but there is no outcome", desc, input, tl, tl.Result(required))
			}
			if st.Unaccounted != nil {
				t.Fatalf("%s: %s reported unaccounted replicas without an outcome", desc, input)
			}
			return
		}
		outcome = st.Outcome
		if !req.Done() || !reflect.DeepEqual(req.Outcome(), outcome) {
			t.Fatalf("%s: %s returned outcome %v but Done() = %v, Outcome() = %v", desc, input, outcome, req.Done(), req.Outcome())
		}
		switch o := outcome.(type) {
		case Success:
			if tl.OK < required || o.Acks != tl.OK {
				t.Fatalf("%s: success with %d acks, model has %d OKs of %d required", desc, o.Acks, tl.OK, required)
			}
			if p.Op == OpRead {
				var from []NodeID
				for _, r := range o.Responses {
					from = append(from, r.From)
				}
				slices.Sort(from)
				if len(from) != tl.OK || len(slices.Compact(from)) != tl.OK {
					t.Fatalf("%s: read success carries responses from %v, want %d distinct", desc, from, tl.OK)
				}
			}
		case RateLimited:
			switch o.RejectedBy {
			case RejectedByCoordinator:
				if !checked || sent != nil {
					t.Fatalf("%s: rejected by the coordinator without a local check, or after sending", desc)
				}
			case RejectedByReplicas:
				if tl.Result(required) != QuorumRejected {
					t.Fatalf("%s: rejected by replicas with tally %+v (%v)", desc, tl, tl.Result(required))
				}
			default:
				t.Fatalf("%s: rate limited by %v", desc, o.RejectedBy)
			}
		case Failed:
			if tl.Result(required) != QuorumLost {
				t.Fatalf("%s: failed with tally %+v (%v)", desc, tl, tl.Result(required))
			}
		case Unavailable:
			if o.Live != nLive || o.Required != required || nLive >= required || sent != nil || checked {
				t.Fatalf("%s: %+v with %d live of %d required, sent %v, checked %v", desc, o, nLive, required, sent, checked)
			}
		case Timeout:
			if now.Before(p.Deadline) || o.Received != tl.OK || o.Required != required {
				t.Fatalf("%s: %+v at %v with tally %+v", desc, o, now.Sub(t0), tl)
			}
		default:
			t.Fatalf("%s: unknown outcome %#v", desc, outcome)
		}
		var wantUnaccounted []NodeID
		if limited && (checked || sent != nil) {
			for _, id := range names {
				if !(checked && id == p.Self) && !slices.ContainsFunc(sent, func(m Send) bool { return m.To == id }) {
					wantUnaccounted = append(wantUnaccounted, id)
				}
			}
		}
		if !slices.Equal(st.Unaccounted, wantUnaccounted) || !slices.Equal(req.Unaccounted(), st.Unaccounted) {
			t.Fatalf("%s: unaccounted %v (Unaccounted() %v), want %v (checked %v, sent %+v)", desc, st.Unaccounted, req.Unaccounted(), wantUnaccounted, checked, sent)
		}
	}
	status := func(b byte) Status { return Status(b % 4) } // includes the invalid zero status
	// canReplace says a fresh answer with status st is a failure of a read at ONE or QUORUM.
	canReplace := func(st Status) bool {
		return outcome == nil && p.Op == OpRead && p.Consistency != All && st != StatusOK && st != StatusRateLimited
	}

	st := req.Start(now)
	apply("Start", st)
	if st.LocalCheck {
		checked = true
		apply("OnLocalCheck", req.OnLocalCheck(CheckResult{Admitted: s.next()%3 != 0, Count: 200, RetryAfter: time.Second}))
	}
	for len(s) > 0 {
		switch s.next() % 6 {
		case 0, 1: // a contacted replica answers, possibly again
			if len(sent) == 0 {
				continue
			}
			m := sent[int(s.next())%len(sent)]
			resp := Response{Seq: m.Seq, From: m.To, Status: status(s.next()), Count: uint32(s.next()), RetryAfter: time.Millisecond}
			st := req.OnResponse(resp)
			_, dup := answered[m.Seq]
			if !dup && outcome == nil {
				answered[m.Seq] = resp.Status
			}
			replaceable = !dup && canReplace(resp.Status)
			apply(fmt.Sprintf("OnResponse(%+v)", resp), st)
			replaceable = false
		case 2: // a response that matches no send
			resp := Response{Seq: int(s.next()%8) - 1, From: NodeID(fmt.Sprintf("n%d", s.next()%7)), Status: StatusOK}
			if i := resp.Seq - 1; i >= 0 && i < len(sent) && sent[i].To == resp.From {
				continue // it matches after all
			}
			apply(fmt.Sprintf("OnResponse(%+v)", resp), req.OnResponse(resp))
		case 3: // time passes
			now = now.Add(time.Duration(s.next()%10) * time.Millisecond)
			apply("Tick", req.Tick(now))
			if outcome == nil && !now.Before(p.Deadline) {
				t.Fatalf("%s: no outcome after Tick at the deadline", desc)
			}
		case 4: // a stray local check answer
			apply("OnLocalCheck", req.OnLocalCheck(CheckResult{Admitted: s.next()%2 == 0}))
		case 5: // the speculative delay passes
			wantSpec = 0
			if outcome == nil && sent != nil && !speculated && p.Speculation == SpeculateDelayed && p.Op == OpRead && p.Consistency != All {
				speculated = true
				tl := req.Tally()
				spares := 0
				for _, id := range names {
					if live(id) && !asked(id) {
						spares++
					}
				}
				wantSpec = min(required-tl.OK, tl.Outstanding(), spares)
			}
			speculating = true
			apply("Speculate", req.Speculate())
			speculating = false
		}
	}
	// Every contacted replica answers, replacements included: the request must finish.
	for i := 0; i < len(sent); i++ {
		m := sent[i]
		if _, ok := answered[m.Seq]; ok {
			continue
		}
		resp := Response{Seq: m.Seq, From: m.To, Status: status(byte(m.Seq)), RetryAfter: time.Millisecond}
		st := req.OnResponse(resp)
		if outcome == nil {
			answered[m.Seq] = resp.Status
		}
		replaceable = canReplace(resp.Status)
		apply(fmt.Sprintf("OnResponse(%+v)", resp), st)
		replaceable = false
	}
	// The deadline passes: the request must be finished, whatever happened before.
	now = p.Deadline
	apply("Tick(deadline)", req.Tick(now))
	if outcome == nil {
		t.Fatalf("%s: no outcome after every replica answered and the deadline passed", desc)
	}
}
