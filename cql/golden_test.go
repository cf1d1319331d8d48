package cql

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/*.txt")

// A golden file is a sequence of cases:
//
//	# comments and blank lines between cases are kept
//	command
//	input, one or more lines
//	----
//	expected output, up to the next blank line
//
// runGolden runs each case through run(command, input) and compares the
// output; with -update it rewrites the file with the actual output.
func runGolden(t *testing.T, path string, run func(cmd, input string) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out strings.Builder
	for i := 0; i < len(lines); {
		line := lines[i]
		if line == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			i++
			continue
		}
		cmdLine := i + 1
		cmd := line
		i++
		var input []string
		for i < len(lines) && lines[i] != "----" {
			input = append(input, lines[i])
			i++
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: case has no ---- separator", path, cmdLine)
		}
		i++
		var want []string
		for i < len(lines) && lines[i] != "" {
			want = append(want, lines[i])
			i++
		}
		got := strings.TrimRight(run(cmd, strings.Join(input, "\n")), "\n")
		if strings.Contains(got, "\n\n") {
			t.Fatalf("%s:%d: output contains a blank line, which the file format cannot hold:\n%s", path, cmdLine, got)
		}
		if !*update && got != strings.Join(want, "\n") {
			t.Errorf("%s:%d: %s\n%s\ngave:\n%s\nwant:\n%s", path, cmdLine, cmd, strings.Join(input, "\n"), got, strings.Join(want, "\n"))
		}
		fmt.Fprintf(&out, "%s\n%s\n----\n%s\n", cmd, strings.Join(input, "\n"), got)
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGoldenParse runs testdata/parse/*.txt: "parse" prints the syntax tree
// of each statement, then its canonical text; errors print one per line.
func TestGoldenParse(t *testing.T) {
	files, err := filepath.Glob("testdata/parse/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files in testdata/parse (err %v)", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			runGolden(t, path, func(cmd, input string) string {
				if cmd != "parse" {
					t.Fatalf("%s: unknown command %q", path, cmd)
				}
				stmts, err := Parse(input)
				if err != nil {
					var b strings.Builder
					for _, e := range err.(ErrorList) {
						kind := "error"
						if e.Unsupported {
							kind = "unsupported"
						}
						fmt.Fprintf(&b, "%s %s\n", kind, e)
					}
					return b.String()
				}
				var b strings.Builder
				for _, s := range stmts {
					b.WriteString(dump(s))
					fmt.Fprintf(&b, "=> %s\n", Format(s))
				}
				return b.String()
			})
		})
	}
}

// dump returns an indented, deterministic rendering of a syntax tree with
// positions, for golden tests. Zero-valued fields are left out.
func dump(n any) string {
	var b strings.Builder
	dumpValue(&b, reflect.ValueOf(n), 0)
	return b.String()
}

func dumpValue(b *strings.Builder, v reflect.Value, indent int) {
	pad := strings.Repeat("  ", indent)
	switch x := v.Interface().(type) {
	case Ident:
		fmt.Fprintf(b, "%s %s\n", QuoteIdent(x.Name), x.NamePos)
		return
	case TableName:
		fmt.Fprintf(b, "%s %s\n", Format(x), x.Pos())
		return
	case *Literal:
		if x.Kind == LitBind {
			fmt.Fprintf(b, "%s %s (index %d) %s\n", x.Kind, Format(x), x.Index, x.ValuePos)
			return
		}
		fmt.Fprintf(b, "%s %s %s\n", x.Kind, Format(x), x.ValuePos)
		return
	case Pos:
		fmt.Fprintf(b, "%s\n", x)
		return
	case Token:
		fmt.Fprintf(b, "%s\n", x)
		return
	case fmt.Stringer:
		if v.Kind() != reflect.Pointer && v.Kind() != reflect.Struct {
			fmt.Fprintf(b, "%s\n", x)
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.Kind() == reflect.Pointer {
			b.WriteString("*")
		}
		dumpValue(b, v.Elem(), indent)
	case reflect.Struct:
		fmt.Fprintf(b, "%s\n", v.Type().Name())
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if f.IsZero() {
				continue
			}
			if f.Kind() == reflect.Slice {
				fmt.Fprintf(b, "%s  %s:\n", pad, v.Type().Field(i).Name)
			} else {
				fmt.Fprintf(b, "%s  %s: ", pad, v.Type().Field(i).Name)
			}
			dumpValue(b, f, indent+1)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			fmt.Fprintf(b, "%s  - ", pad)
			dumpValue(b, v.Index(i), indent+2)
		}
	default:
		fmt.Fprintf(b, "%v\n", v.Interface())
	}
}
