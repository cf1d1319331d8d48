package cql

import (
	"reflect"
	"testing"
)

// TestParseCollectionUpdates checks the operations on a column's current value and the element
// assignments and deletions: their AST, and that they print back as written.
func TestParseCollectionUpdates(t *testing.T) {
	for _, tt := range []struct {
		src  string
		want []Assignment // Column, Op, Prepend and whether Element is set only
	}{
		{"UPDATE t SET s = s + {1, 2} WHERE k = 1", []Assignment{{Column: Ident{Name: "s"}, Op: PLUS}}},
		{"UPDATE t SET s = s - {1} WHERE k = 1", []Assignment{{Column: Ident{Name: "s"}, Op: MINUS}}},
		{"UPDATE t SET l = [1, 2] + l WHERE k = 1", []Assignment{{Column: Ident{Name: "l"}, Op: PLUS, Prepend: true}}},
		{"UPDATE t SET c = c + ? WHERE k = 1", []Assignment{{Column: Ident{Name: "c"}, Op: PLUS}}},
		{"UPDATE t SET m['a'] = 1, \"Q\" = \"Q\" - ['x'] WHERE k = 1", []Assignment{{Column: Ident{Name: "m"}, Element: &Literal{}}, {Column: Ident{Name: "Q"}, Op: MINUS}}},
		{"UPDATE t SET l = [1] WHERE k = 1", []Assignment{{Column: Ident{Name: "l"}}}},
	} {
		st, err := ParseStatement(tt.src)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", tt.src, err)
			continue
		}
		u := st.(*UpdateStmt)
		var got []Assignment
		for _, a := range u.Set {
			g := Assignment{Column: Ident{Name: a.Column.Name}, Op: a.Op, Prepend: a.Prepend}
			if a.Element != nil {
				g.Element = &Literal{}
			}
			got = append(got, g)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseStatement(%q) assignments = %+v, want %+v", tt.src, got, tt.want)
		}
		if f := Format(st); f != tt.src {
			t.Errorf("Format(ParseStatement(%q)) = %q", tt.src, f)
		}
	}
	st, err := ParseStatement("DELETE a, m[?], l[2] FROM t WHERE k = ?")
	if err != nil {
		t.Fatal(err)
	}
	d := st.(*DeleteStmt)
	if len(d.Elements) != 3 || d.Elements[0] != nil || d.Elements[1] == nil || d.Elements[2] == nil {
		t.Errorf("DELETE a, m[?], l[2] elements = %v, want nil, ?, 2", d.Elements)
	}
	if n := len(BindMarkers(st)); n != 2 {
		t.Errorf("DELETE a, m[?], l[2] ... k = ? has %d bind markers, want 2", n)
	}
	if f := Format(st); f != "DELETE a, m[?], l[2] FROM t WHERE k = ?" {
		t.Errorf("Format = %q", f)
	}
}

func TestParseElementSelection(t *testing.T) {
	for _, src := range []string{
		"SELECT m['k'], s[1..3], s[..?], m[?..], v FROM t WHERE k = 1",
		"SELECT s[1.5..2.5] FROM t WHERE k = 1",
	} {
		st, err := ParseStatement(src)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", src, err)
			continue
		}
		if f := Format(st); f != src {
			t.Errorf("Format(ParseStatement(%q)) = %q", src, f)
		}
	}
	st, _ := ParseStatement("SELECT m['k'], s[1..3], s[..?] FROM t WHERE k = 1")
	fs := st.(*SelectStmt).Funcs
	if len(fs) != 3 || fs[0].Kind != SelectElement || fs[0].Element.Slice || !fs[1].Element.Slice || fs[2].Element.From != nil || fs[2].Element.To == nil {
		t.Errorf("element selections parsed as %+v", fs)
	}
}

func TestParseFieldUpdates(t *testing.T) {
	for _, src := range []string{"UPDATE t SET a.street = 'x', a.zip = ? WHERE k = 1", "DELETE b, a.zip FROM t WHERE k = 1"} {
		st, err := ParseStatement(src)
		if err != nil {
			t.Errorf("ParseStatement(%q): %v", src, err)
			continue
		}
		if f := Format(st); f != src {
			t.Errorf("Format(ParseStatement(%q)) = %q", src, f)
		}
	}
	st, _ := ParseStatement("DELETE b, a.zip FROM t WHERE k = 1")
	if d := st.(*DeleteStmt); len(d.Fields) != 2 || d.Fields[0].Name != "" || d.Fields[1].Name != "zip" {
		t.Errorf("DELETE b, a.zip fields = %v", d.Fields)
	}
}
