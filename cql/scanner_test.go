package cql

import (
	"fmt"
	"strings"
	"testing"
)

// scanAll returns the tokens of src as "line:col TOKEN lit" lines.
func scanAll(src string) []string {
	var s Scanner
	s.Init(src)
	var out []string
	for {
		pos, tok, lit := s.Scan()
		out = append(out, fmt.Sprintf("%s %s %q", pos, tok, lit))
		if tok == EOF {
			return out
		}
	}
}

func TestScan(t *testing.T) {
	tests := []struct {
		src  string
		want string
	}{
		{"", `1:1 EOF ""`},
		{"select", `1:1 SELECT "select"`},
		{"SeLeCt Foo_1", `1:1 SELECT "SeLeCt"|1:8 IDENT "Foo_1"`},
		{`"My ""Table"""`, `1:1 QIDENT "My \"Table\""`},
		{`'it''s' ''`, `1:1 STRING "it's"|1:9 STRING ""`},
		{"42 -7 1.5 -2e10 1E+3 3.", `1:1 INT "42"|1:4 INT "-7"|1:7 FLOAT "1.5"|1:11 FLOAT "-2e10"|1:17 FLOAT "1E+3"|1:22 FLOAT "3."`},
		{"0xCAFE 0x", `1:1 BLOB "0xCAFE"|1:8 BLOB "0x"`},
		{"( ) { } , . ; : * ? = < <= > >= -", `1:1 ( ""|1:3 ) ""|1:5 { ""|1:7 } ""|1:9 , ""|1:11 . ""|1:13 ; ""|1:15 : ""|1:17 * ""|1:19 ? ""|1:21 = ""|1:23 < ""|1:25 <= ""|1:28 > ""|1:30 >= ""|1:33 - ""`},
		{"a -- comment\nb // another\n/* block\n */ c", `1:1 IDENT "a"|2:1 IDENT "b"|4:5 IDENT "c"`},
		{"'multi\nline' x", `1:1 STRING "multi\nline"|2:7 IDENT "x"`},
		{"'é' x", `1:1 STRING "é"|1:5 IDENT "x"`},
		{"-Infinity", `1:1 - ""|1:2 INFINITY "Infinity"`},
		{"a<=b", `1:1 IDENT "a"|1:2 <= ""|1:4 IDENT "b"`},
		{"123e4567-e89b-12d3-a456-426614174000 DEADBEEF-dead-beef-dead-beefdeadbeef,0", `1:1 UUID "123e4567-e89b-12d3-a456-426614174000"|1:38 UUID "DEADBEEF-dead-beef-dead-beefdeadbeef"|1:74 , ""|1:75 INT "0"`},
		// Not quite uuids: a number or an identifier, then what follows.
		{"123e4567-e89b-12d3-a456-42661417400", `1:1 FLOAT "123e4567"|1:9 - ""|1:10 IDENT "e89b"|1:14 ILLEGAL "malformed number -12d3"|1:19 - ""|1:20 IDENT "a456"|1:24 INT "-42661417400"`},
	}
	for _, tt := range tests {
		got := scanAll(tt.src)
		want := strings.Split(tt.want, "|")
		if want[len(want)-1] != got[len(got)-1] { // the EOF line is implied
			want = append(want, got[len(got)-1])
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("scanning %q gave\n  %s\nwant\n  %s", tt.src, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
}

func TestScanIllegal(t *testing.T) {
	tests := []struct {
		src     string
		wantPos string
		wantMsg string
	}{
		{"'abc", "1:1", "string literal is not terminated"},
		{`"abc`, "1:1", "quoted identifier is not terminated"},
		{`""`, "1:1", "empty quoted identifier"},
		{"x /* abc", "1:3", "comment is not terminated"},
		{"10abc", "1:1", "malformed number 10abc"},
		{"1e", "1:1", "malformed number 1e"},
		{"1.5x", "1:1", "malformed number 1.5x"},
		{"0xabc", "1:1", "blob literal 0xabc has an odd number of hex digits"},
		{"0xfg", "1:1", "malformed blob literal 0xfg"},
		{"$", "1:1", `unexpected character '$'`},
		{"  é", "1:3", `unexpected character 'é'`},
		{"\xff", "1:1", "invalid UTF-8 byte 0xff"},
		{"'\xff'", "1:1", "string literal is not valid UTF-8"},
	}
	for _, tt := range tests {
		var s Scanner
		s.Init(tt.src)
		var pos Pos
		var tok Token
		var lit string
		for tok != ILLEGAL && tok != EOF || pos.Line == 0 {
			pos, tok, lit = s.Scan()
			if tok == EOF {
				break
			}
		}
		if tok != ILLEGAL || pos.String() != tt.wantPos || lit != tt.wantMsg {
			t.Errorf("scanning %q gave %s %s %q, want %s ILLEGAL %q", tt.src, pos, tok, lit, tt.wantPos, tt.wantMsg)
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		word string
		want Token
	}{
		{"select", SELECT}, {"SELECT", SELECT}, {"Keyspaces", KEYSPACES}, {"timestamp", TIMESTAMP},
		{"selec", IDENT}, {"x", IDENT}, {"keyspacesx", IDENT}, {"", IDENT},
	}
	for _, tt := range tests {
		if got := Lookup(tt.word); got != tt.want {
			t.Errorf("Lookup(%q) = %s, want %s", tt.word, got, tt.want)
		}
	}
	for tok := keywordBeg + 1; tok < keywordEnd; tok++ {
		if got := Lookup(strings.ToLower(tok.String())); got != tok {
			t.Errorf("Lookup(%q) = %s, want the keyword itself", strings.ToLower(tok.String()), got)
		}
	}
}

func TestScanDuration(t *testing.T) {
	tests := []struct {
		src  string
		tok  Token
		want string
	}{
		{"500ms", DURATION, "500ms"},
		{"1h30m", DURATION, "1h30m"},
		{"2S", DURATION, "2S"},
		{"1y2mo3w4d5h6m7s8ms9us10ns", DURATION, "1y2mo3w4d5h6m7s8ms9us10ns"},
		{"5parsecs", ILLEGAL, "malformed number 5parsecs"},
		{"1h30", ILLEGAL, "malformed number 1h30"},
		{"1.5s", ILLEGAL, "malformed number 1.5s"},
		{"-5s", DURATION, "-5s"},
		{"10abc", ILLEGAL, "malformed number 10abc"},
	}
	for _, tt := range tests {
		var s Scanner
		s.Init(tt.src)
		_, tok, lit := s.Scan()
		if tok != tt.tok || lit != tt.want {
			t.Errorf("Scan(%q) = %s %q, want %s %q", tt.src, tok, lit, tt.tok, tt.want)
		}
	}
}
