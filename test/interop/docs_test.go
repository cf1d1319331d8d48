package interop

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docsPath is the document whose connection snippets are regions of these tests.
const docsPath = "../../docs/cql-protocol.md"

// snippetRE finds a code block preceded by a comment naming where it comes from:
// <!-- test/interop/gocql_test.go: gocql-connect -->, then the fenced block.
var snippetRE = regexp.MustCompile("(?s)<!-- ([^ :]+): ([a-z-]+) -->\n```[a-z]*\n(.*?)\n```")

// TestDocsSnippetsAreWhatTheTestsRun checks that every code block of docs/cql-protocol.md that
// names a region of a test file (the lines between `docs:begin NAME` and `docs:end` there) is
// exactly that region, dedented, so the documented way to connect and to recognise the rate-limit
// error is the one the driver tests run.
func TestDocsSnippetsAreWhatTheTestsRun(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, m := range snippetRE.FindAllStringSubmatch(string(doc), -1) {
		file, name, block := m[1], m[2], m[3]
		found[name] = true
		src, err := os.ReadFile(filepath.Join("../..", file))
		if err != nil {
			t.Errorf("%s names region %s of %s: %v", docsPath, name, file, err)
			continue
		}
		region, ok := docsRegion(string(src), name)
		if !ok {
			t.Errorf("%s shows region %s of %s, which has no docs:begin %s ... docs:end", docsPath, name, file, name)
			continue
		}
		if region != block {
			t.Errorf("%s's snippet %s differs from %s's region; the doc shows:\n%s\nthe test runs:\n%s", docsPath, name, file, block, region)
		}
	}
	for _, name := range []string{"gocql-connect", "gocql-retry", "gocql-rate-limit", "python-imports", "python-connect", "python-rate-limit", "node-imports", "node-connect", "node-rate-limit", "gocql-auth", "python-auth", "python-auth-connect", "node-auth-connect"} {
		if !found[name] {
			t.Errorf("%s has no snippet %s", docsPath, name)
		}
	}
}

// docsRegion returns the lines of src strictly between the line ending in "docs:begin name" and
// the next line containing "docs:end", without trailing blank lines and with their common
// indentation removed.
func docsRegion(src, name string) (string, bool) {
	var lines []string
	in := false
	for _, l := range strings.Split(src, "\n") {
		switch {
		case !in && strings.HasSuffix(strings.TrimSpace(l), "docs:begin "+name):
			in = true
		case in && strings.Contains(l, "docs:end"):
			for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
				lines = lines[:len(lines)-1]
			}
			return dedent(lines), true
		case in:
			lines = append(lines, l)
		}
	}
	return "", false
}

func dedent(lines []string) string {
	prefix := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first || !strings.HasPrefix(indent, prefix) {
			if first {
				prefix = indent
			} else {
				for !strings.HasPrefix(indent, prefix) {
					prefix = prefix[:len(prefix)-1]
				}
			}
			first = false
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimPrefix(l, prefix)
	}
	return strings.Join(out, "\n")
}
