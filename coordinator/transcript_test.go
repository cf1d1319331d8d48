package coordinator

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the testdata transcripts with the actual output")

// TestTranscripts replays the request transcripts in testdata/*.txt. Each block is one command,
// a "----" line, and the expected output up to a blank line; lines starting with # are comments.
// Run `go test ./coordinator -run TestTranscripts -update` to regenerate the expected output,
// then read the diff.
//
// Commands (times are offsets from the request's start):
//
//	start op=read|write cl=one|quorum|all replicas=n1,n2,n3 [self=n1] [down=n3] [limit=50]
//	      [r=0.4] [exempt] [deadline=100ms] [now=0s] [read-order=n2,n1] [learned]
//	      [spec=never|delayed|always]
//	local-check admit|reject [count=N] [retry=D] [would-reject]
//	speculate
//	respond NODE ok|rejected|failed|invalid [seq=N] [payload=P] [count=N] [retry=D] [born=D] [would-reject] [err=MSG]
//	tick D
//
// respond uses the Seq of the Send to NODE unless seq= is given. Its output starts with
// "ignored" when the response changed nothing, and ends with the tally while the request runs.
// The step that finishes a request prints what its coordinator learns (Request.Learn), if
// anything.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in testdata: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runTranscript(t, file) })
	}
}

type block struct {
	pre  []string // comments and blank lines before the command
	line int      // line number of the command
	cmd  string
	want []string
}

func parseTranscript(t *testing.T, file string) (blocks []block, tail []string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var pre []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			continue
		}
		b := block{pre: pre, line: i + 1, cmd: l}
		pre = nil
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: command %q is not followed by ----", file, i+1, l)
		}
		i += 2
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			b.want = append(b.want, lines[i])
		}
		if i < len(lines) {
			pre = append(pre, lines[i]) // the blank line that ended the output
		}
		blocks = append(blocks, b)
	}
	return blocks, pre
}

func runTranscript(t *testing.T, file string) {
	blocks, tail := parseTranscript(t, file)
	var d driver
	var out strings.Builder
	for _, b := range blocks {
		got := d.run(b.cmd)
		if *update {
			for _, l := range b.pre {
				out.WriteString(l + "\n")
			}
			out.WriteString(b.cmd + "\n----\n")
			for _, l := range got {
				out.WriteString(l + "\n")
			}
			continue
		}
		if g, w := strings.Join(got, "\n"), strings.Join(b.want, "\n"); g != w {
			t.Errorf("%s:%d: %s\noutput:\n%s\nwant:\n%s", file, b.line, b.cmd, g, w)
		}
	}
	if *update {
		for _, l := range tail {
			out.WriteString(l + "\n")
		}
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// driver plays the shell for one request at a time.
type driver struct {
	t0  time.Time
	req *Request
	seq map[NodeID]int // the Seq of the Send to each node
}

func (d *driver) run(cmd string) []string {
	out := d.exec(cmd)
	if len(out) == 0 {
		out = append(out, "nothing")
	}
	return out
}

func (d *driver) exec(cmd string) []string {
	words, err := splitWords(cmd)
	if err != nil {
		return []string{"bad command: " + err.Error()}
	}
	name := words[0]
	npos := map[string]int{"respond": 2, "tick": 1}[name]
	args := parseArgs(words[1:], npos)
	if name != "start" && d.req == nil {
		return []string{"bad command: no request started"}
	}
	switch name {
	case "start":
		return d.start(args)
	case "local-check":
		res := CheckResult{}
		switch {
		case args.flag("admit"):
			res.Admitted = true
		case args.flag("reject"):
		default:
			return []string{"bad command: local-check needs admit or reject"}
		}
		res.Count = uint32(args.int("count", 0))
		res.RetryAfter = args.duration("retry", 0)
		res.WouldReject = args.flag("would-reject")
		if err := args.err(); err != nil {
			return []string{"bad command: " + err.Error()}
		}
		out := d.print(d.req.OnLocalCheck(res))
		if n := d.req.Speculative(); n > 0 && !d.req.Done() {
			out = append(out, fmt.Sprintf("speculative: %d", n))
		}
		return out
	case "respond":
		return d.respond(args)
	case "speculate":
		if err := args.err(); err != nil {
			return []string{"bad command: " + err.Error()}
		}
		out := d.print(d.req.Speculate())
		if n := d.req.Speculative(); n > 0 {
			out = append(out, fmt.Sprintf("speculative: %d", n))
		}
		return out
	case "tick":
		if len(args.pos) != 1 {
			return []string{"bad command: tick needs one duration"}
		}
		dur, err := time.ParseDuration(args.pos[0])
		if err == nil {
			err = args.err()
		}
		if err != nil {
			return []string{"bad command: " + err.Error()}
		}
		return d.print(d.req.Tick(d.t0.Add(dur)))
	}
	return []string{"bad command: unknown command " + name}
}

func (d *driver) start(args *cmdArgs) []string {
	d.t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d.req = nil
	d.seq = map[NodeID]int{}
	p := Params{Self: NodeID(args.str("self", ""))}
	switch op := args.str("op", ""); op {
	case "read":
		p.Op = OpRead
	case "write":
		p.Op = OpWrite
	case "invalid":
	default:
		return []string{"bad command: op=" + op}
	}
	if cl := args.str("cl", ""); cl != "invalid" {
		var err error
		if p.Consistency, err = ParseConsistency(cl); err != nil {
			return []string{"bad command: " + err.Error()}
		}
	}
	down := map[NodeID]bool{}
	for _, id := range args.ids("down") {
		down[id] = true
	}
	for _, id := range args.ids("replicas") {
		p.Replicas = append(p.Replicas, Replica{ID: id, Down: down[id]})
	}
	p.ReadOrder = args.ids("read-order")
	p.Limit = uint32(args.int("limit", 0))
	p.Draw = args.float("r", 0)
	p.Exempt = args.flag("exempt")
	p.Learned = args.flag("learned")
	switch spec := args.str("spec", "never"); spec {
	case "never":
	case "delayed":
		p.Speculation = SpeculateDelayed
	case "always":
		p.Speculation = SpeculateAlways
	case "invalid":
		p.Speculation = SpeculateAlways + 1
	default:
		return []string{"bad command: spec=" + spec}
	}
	p.Stamp = d.t0
	if dl := args.duration("deadline", 0); dl != 0 {
		p.Deadline = d.t0.Add(dl)
	}
	now := d.t0.Add(args.duration("now", 0))
	if err := args.err(); err != nil {
		return []string{"bad command: " + err.Error()}
	}
	req, err := NewRequest(p)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	d.req = req
	out := d.print(req.Start(now))
	if n := req.Speculative(); n > 0 {
		out = append(out, fmt.Sprintf("speculative: %d", n))
	}
	return out
}

func (d *driver) respond(args *cmdArgs) []string {
	if len(args.pos) != 2 {
		return []string{"bad command: respond needs a node and a status"}
	}
	resp := Response{From: NodeID(args.pos[0])}
	switch args.pos[1] {
	case "ok":
		resp.Status = StatusOK
	case "rejected":
		resp.Status = StatusRateLimited
	case "failed":
		resp.Status = StatusFailed
	case "invalid":
	default:
		return []string{"bad command: unknown status " + args.pos[1]}
	}
	resp.Seq = args.int("seq", d.seq[resp.From])
	resp.Count = uint32(args.int("count", 0))
	resp.RetryAfter = args.duration("retry", 0)
	resp.WouldReject = args.flag("would-reject")
	if born := args.duration("born", 0); born != 0 {
		resp.Born = d.t0.Add(born)
	}
	if msg := args.str("err", ""); msg != "" {
		resp.Err = errors.New(msg)
	}
	if p := args.str("payload", ""); p != "" {
		resp.Payload = p
	}
	if err := args.err(); err != nil {
		return []string{"bad command: " + err.Error()}
	}
	before := d.req.Tally()
	out := d.print(d.req.OnResponse(resp))
	if d.req.Tally() == before {
		out = append([]string{"ignored"}, out...)
	}
	if !d.req.Done() {
		tl := d.req.Tally()
		out = append(out, fmt.Sprintf("tally: ok=%d rejected=%d failed=%d outstanding=%d",
			tl.OK, tl.Rejected, tl.Failed, tl.Outstanding()))
	}
	return out
}

// print renders a step (nothing for an empty step), and checks that the request agrees with it about being done.
func (d *driver) print(s Step) []string {
	var out []string
	if s.LocalCheck {
		out = append(out, "local-check")
	}
	for _, m := range s.Sends {
		d.seq[m.To] = m.Seq
		line := fmt.Sprintf("send #%d to %s mode=%v", m.Seq, m.To, m.Mode)
		if m.Mode == ModeAccountAndEnforce || m.Draw != 0 {
			line += fmt.Sprintf(" r=%v", m.Draw)
		}
		out = append(out, line)
	}
	if s.Outcome != nil {
		out = append(out, "outcome: "+formatOutcome(s.Outcome))
		if s.Unaccounted != nil {
			out = append(out, "unaccounted: "+joinIDs(s.Unaccounted))
		}
		if err := s.Outcome.Err("ks", "tbl"); err != nil {
			out = append(out, "error: "+err.Error())
		}
		if ok, _ := s.Outcome.(Success); ok.WouldReject {
			out = append(out, "warning: "+ok.Warning("ks", "tbl"))
		}
		if l, ok := d.req.Learn(); ok {
			line := fmt.Sprintf("learn: count=%d", l.Count)
			if !l.Born.IsZero() {
				line += fmt.Sprintf(" born=%v", l.Born.Sub(d.t0))
			}
			out = append(out, line)
		}
		if !d.req.Done() || fmt.Sprint(d.req.Outcome()) != fmt.Sprint(s.Outcome) {
			out = append(out, fmt.Sprintf("BUG: Done() = %v, Outcome() = %v", d.req.Done(), d.req.Outcome()))
		}
	} else if s.Unaccounted != nil {
		out = append(out, "BUG: unaccounted without an outcome")
	}
	return out
}

func formatOutcome(o Outcome) string {
	switch o := o.(type) {
	case Success:
		s := fmt.Sprintf("success %v acks=%d", o.Op, o.Acks)
		if o.Responses != nil {
			var rs []string
			for _, r := range o.Responses {
				rs = append(rs, fmt.Sprintf("%s:%v", r.From, r.Payload))
			}
			s += " responses=" + strings.Join(rs, ",")
		}
		return s
	case RateLimited:
		return fmt.Sprintf("rate-limited %v by=%v limit=%d count=%d retry=%v",
			o.Op, o.RejectedBy, o.Limit, o.Count, o.RetryAfter)
	case Unavailable:
		return fmt.Sprintf("unavailable %v live=%d required=%d", o.Consistency, o.Live, o.Required)
	case Timeout:
		return fmt.Sprintf("timeout %v %v received=%d required=%d", o.Op, o.Consistency, o.Received, o.Required)
	case Failed:
		return fmt.Sprintf("failed %v %v received=%d required=%d failures=%d rejected=%d cause=%q",
			o.Op, o.Consistency, o.Received, o.Required, o.Failures, o.Rejected, o.Cause)
	}
	return fmt.Sprintf("unknown outcome %#v", o)
}

func joinIDs(ids []NodeID) string {
	if len(ids) == 0 {
		return "none"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ",")
}

// cmdArgs holds a command's positional arguments, key=value pairs and bare flags. Lookups record
// malformed values, and err reports them and any key no lookup asked for (a typo in a transcript).
type cmdArgs struct {
	pos  []string
	kv   map[string]string
	used map[string]bool
	errs []error
}

// splitWords splits a line into words, keeping double-quoted values (err="disk full") whole.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inQuote, inWord := false, false
	for _, c := range line {
		switch {
		case c == '"':
			inQuote = !inQuote
			inWord = true
		case c == ' ' && !inQuote:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("empty command")
	}
	return words, nil
}

// parseArgs takes the first npos words as positional arguments.
func parseArgs(words []string, npos int) *cmdArgs {
	a := &cmdArgs{kv: map[string]string{}, used: map[string]bool{}}
	for i, w := range words {
		if i < npos {
			a.pos = append(a.pos, w)
			continue
		}
		k, v, _ := strings.Cut(w, "=")
		a.kv[k] = v
	}
	return a
}

func (a *cmdArgs) flag(k string) bool {
	a.used[k] = true
	_, ok := a.kv[k]
	return ok
}

func (a *cmdArgs) str(k, def string) string {
	a.used[k] = true
	if v, ok := a.kv[k]; ok {
		return v
	}
	return def
}

func (a *cmdArgs) ids(k string) []NodeID {
	v := a.str(k, "")
	if v == "" {
		return nil
	}
	var ids []NodeID
	for _, s := range strings.Split(v, ",") {
		ids = append(ids, NodeID(s))
	}
	return ids
}

func (a *cmdArgs) int(k string, def int) int {
	a.used[k] = true
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		a.errs = append(a.errs, fmt.Errorf("%s=%s: %w", k, v, err))
	}
	return n
}

func (a *cmdArgs) float(k string, def float64) float64 {
	a.used[k] = true
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		a.errs = append(a.errs, fmt.Errorf("%s=%s: %w", k, v, err))
	}
	return f
}

func (a *cmdArgs) duration(k string, def time.Duration) time.Duration {
	a.used[k] = true
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		a.errs = append(a.errs, fmt.Errorf("%s=%s: %w", k, v, err))
	}
	return d
}

func (a *cmdArgs) err() error {
	errs := a.errs
	for _, k := range slices.Sorted(maps.Keys(a.kv)) {
		if !a.used[k] {
			errs = append(errs, fmt.Errorf("unknown argument %q", k))
		}
	}
	return errors.Join(errs...)
}
