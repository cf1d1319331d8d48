package serveline

import (
	"testing"
)

func TestStringParsesBack(t *testing.T) {
	for _, l := range []Line{
		{ID: "e05db37f-5564-4400-966a-e6f8ebb59436", Addr: "127.0.0.1:9043", GossipAddr: "127.0.0.1:7946", MetricsAddr: "127.0.0.1:9180", DataDir: "./kvnode-data"},
		{ID: "n1", Addr: "127.0.0.1:40001", GossipAddr: "127.0.0.1:40002", DataDir: "/tmp/a dir (with parens)"},
		{ID: "n2", Addr: "127.0.0.1:9043", GossipAddr: "127.0.0.1:7946", InternodeAddr: "127.0.0.1:7000", MetricsAddr: "127.0.0.1:9180", DataDir: "d"},
		{ID: "n3", Addr: "[::1]:9043", GossipAddr: "[::1]:7946", InternodeAddr: "[::1]:7000", DataDir: "d, e"},
	} {
		got, ok := Parse(l.String())
		if !ok || got != l {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", l.String(), got, ok, l)
		}
	}
	for _, s := range []string{"", "connect with: kvnode cql --addr 127.0.0.1:9043", "kvnode serving clients on"} {
		if l, ok := Parse(s); ok {
			t.Errorf("Parse(%q) = %+v, want no match", s, l)
		}
	}
}

func TestWatcherFindsTheLineAcrossWrites(t *testing.T) {
	w := NewWatcher()
	want := Line{ID: "n1", Addr: "127.0.0.1:1", GossipAddr: "127.0.0.1:2", DataDir: "d"}
	out := "starting\n" + want.String() + "\nconnect with: kvnode cql --addr 127.0.0.1:1\n" + want.String() + "\n"
	for i := 0; i < len(out); i += 7 { // arbitrary chunks, as a pipe delivers them
		end := min(i+7, len(out))
		if n, err := w.Write([]byte(out[i:end])); n != end-i || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	select {
	case got := <-w.Ready():
		if got != want {
			t.Errorf("watcher delivered %+v, want %+v", got, want)
		}
	default:
		t.Fatal("watcher delivered nothing after the serving line was written")
	}
	select {
	case l := <-w.Ready():
		t.Errorf("watcher delivered a second line %+v; it must deliver once", l)
	default:
	}
}
