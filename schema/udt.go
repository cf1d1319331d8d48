package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kvnode/kvnode/cql"
)

// User-defined types. A user type belongs to its keyspace (Keyspace.UserTypes) and changes with
// it: CREATE, ALTER and DROP TYPE are changes of the keyspace's entry, agreed like ALTER
// KEYSPACE. A column (or a field, element or component) of a user type has a self-describing
// Type, the type written out in full:
//
//	frozen<udt<ks.name, field1 type1, field2 type2, ...>>
//
// so that a value can be checked, compared, decoded and described from its Type alone, as the
// other parametric types are; ALTER TYPE rewrites the types of the keyspace's tables and user
// types that use the type, at the change's version. Type.CQL gives the name Cassandra prints,
// frozen<name>. A value is encoded as a tuple is, its fields in order, except that the fields at
// the end may be missing, meaning null (values written before ALTER TYPE ADD read with the new
// fields null, as in Cassandra); the canonical value leaves out its trailing null fields, so that
// equal values are equal bytes. Only frozen user types are built: a non-frozen one needs a cell
// per field.

// udtName is a user type's identity and field names in a typeNode.
type udtName struct {
	keyspace, name string
	fields         []string
}

// UDT is the Go value Decode returns for a user type: every field in order, nil for null.
type UDT []UDTField

// UDTField is one field of a UDT value.
type UDTField struct {
	Name  string
	Value any
}

// UserType is a user-defined type of a keyspace.
type UserType struct {
	Keyspace, Name string
	FieldNames     []string
	FieldTypes     []Type // canonical, user types written out in full
}

// Type returns the type of a frozen<name> column of u.
func (u *UserType) Type() Type {
	var b strings.Builder
	b.WriteString("frozen<udt<")
	b.WriteString(u.Keyspace + "." + u.Name)
	for i, f := range u.FieldNames {
		b.WriteString(", " + f + " " + string(u.FieldTypes[i]))
	}
	b.WriteString(">>")
	return Type(b.String())
}

// CreateStatement returns the CREATE TYPE statement that makes u.
func (u *UserType) CreateStatement() string {
	var b strings.Builder
	b.WriteString("CREATE TYPE " + qualified(u.Keyspace, u.Name) + " (\n")
	for i, f := range u.FieldNames {
		sep := ",\n"
		if i == len(u.FieldNames)-1 {
			sep = "\n"
		}
		b.WriteString("    " + cql.QuoteIdent(f) + " " + u.FieldTypes[i].CQL() + sep)
	}
	b.WriteString(");")
	return b.String()
}

func (n *typeNode) udtCanonical() string {
	var b strings.Builder
	if !n.multiCell {
		b.WriteString("frozen<")
	}
	b.WriteString("udt<" + n.udt.keyspace + "." + n.udt.name)
	for i, f := range n.udt.fields {
		b.WriteString(", " + f + " " + n.elems[i].canonical())
	}
	b.WriteByte('>')
	if !n.multiCell {
		b.WriteByte('>')
	}
	return b.String()
}

// cqlName returns n's name as Cassandra prints it: a user type as frozen<name>.
func (n *typeNode) cqlName() string {
	switch n.kind {
	case NotParametric:
		return string(n.scalar)
	case ParamUDT:
		return "frozen<" + cql.QuoteIdent(n.udt.name) + ">"
	}
	var b strings.Builder
	b.WriteString("frozen<")
	b.WriteString([...]string{ParamList: "list", ParamSet: "set", ParamMap: "map", ParamTuple: "tuple"}[n.kind])
	b.WriteByte('<')
	for i, e := range n.elems {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.cqlName())
	}
	b.WriteString(">>")
	return b.String()
}

// CQL returns t's name as Cassandra prints it in system_schema and DESCRIBE: t itself, except
// that a user type is frozen<name> (its keyspace and fields are in system_schema.types).
func (t Type) CQL() string {
	if !strings.Contains(string(t), "udt<") {
		return string(t)
	}
	if n := t.node(); n != nil {
		if t.MultiCell() {
			return strings.TrimSuffix(strings.TrimPrefix(n.cqlName(), "frozen<"), ">")
		}
		return n.cqlName()
	}
	return string(t)
}

// UserType returns the user type t is (frozen<udt<...>>); false for any other type.
func (t Type) UserType() (*UserType, bool) {
	n := t.node()
	if n == nil || n.kind != ParamUDT {
		return nil, false
	}
	u := &UserType{Keyspace: n.udt.keyspace, Name: n.udt.name, FieldNames: slices.Clone(n.udt.fields)}
	for _, e := range n.elems {
		u.FieldTypes = append(u.FieldTypes, e.typ())
	}
	return u, true
}

// usesType reports whether t holds the user type ks.name anywhere.
func usesType(t Type, ks, name string) bool {
	return strings.Contains(string(t), "udt<"+ks+"."+name+",")
}

// parseUDT reads udt<ks.name, field type, ...> of a canonical name; the word udt has been read
// and '<' is next.
func (p *typeParser) parseUDT(depth int) (*typeNode, error) {
	p.pos++ // '<'
	qn := p.word()
	ks, name, ok := strings.Cut(qn, ".")
	if !ok || checkName("keyspace", ks) != nil || checkName("type", name) != nil {
		return nil, fmt.Errorf("invalid user type name %q in %q", qn, p.src)
	}
	n := &typeNode{kind: ParamUDT, udt: &udtName{keyspace: ks, name: name}}
	for p.peek() == ',' {
		p.pos++
		f := p.word()
		if err := checkName("field", f); err != nil {
			return nil, err
		}
		if slices.Contains(n.udt.fields, f) {
			return nil, fmt.Errorf("field %s appears twice in %q", f, p.src)
		}
		e, err := p.parse(depth+1, true)
		if err != nil {
			return nil, err
		}
		n.udt.fields = append(n.udt.fields, f)
		n.elems = append(n.elems, e)
	}
	if p.peek() != '>' || len(n.elems) == 0 {
		return nil, fmt.Errorf("expected ', field type' or '>' in %q", p.src)
	}
	p.pos++
	return n, nil
}

func (n *typeNode) checkUDT(v []byte) error {
	rest := v
	for i := 0; len(rest) > 0; i++ {
		if i == len(n.elems) {
			return fmt.Errorf("%d bytes after the last of %d fields", len(rest), len(n.elems))
		}
		c, r, err := paramElement(rest)
		if err != nil {
			return fmt.Errorf("field %s: %w", n.udt.fields[i], err)
		}
		rest = r
		if c == nil {
			if len(rest) == 0 {
				return fmt.Errorf("field %s: a null field at the end (the canonical value leaves trailing nulls out)", n.udt.fields[i])
			}
			continue
		}
		if err := n.elems[i].check(c); err != nil {
			return fmt.Errorf("field %s: %w", n.udt.fields[i], err)
		}
	}
	return nil
}

func (n *typeNode) decodeUDT(v []byte) any {
	out := make(UDT, len(n.elems))
	for i, e := range n.elems {
		var c []byte
		if len(v) > 0 {
			c, v, _ = paramElement(v)
		}
		out[i] = UDTField{Name: n.udt.fields[i], Value: e.decode(c)}
	}
	return out
}

// udtValue encodes fields, leaving out the trailing nulls.
func udtValue(fields [][]byte) []byte {
	end := len(fields)
	for end > 0 && fields[end-1] == nil {
		end--
	}
	out := []byte{}
	for _, f := range fields[:end] {
		out = appendParamElem(out, f)
	}
	return out
}

func (n *typeNode) normalizeUDT(v []byte) ([]byte, error) {
	fields := make([][]byte, len(n.elems))
	rest := v
	for i := 0; len(rest) > 0; i++ {
		if i == len(n.elems) {
			return nil, fmt.Errorf("%d bytes after the last of %d fields", len(rest), len(n.elems))
		}
		c, r, err := paramElement(rest)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", n.udt.fields[i], err)
		}
		rest = r
		if c != nil {
			if c, err = n.elems[i].normalize(c); err != nil {
				return nil, fmt.Errorf("field %s: %w", n.udt.fields[i], err)
			}
		}
		fields[i] = c
	}
	return udtValue(fields), nil
}

func (n *typeNode) literalUDT(u *cql.UDTLiteral, bind func(*cql.Literal) ([]byte, bool, error)) ([]byte, bool, error) {
	fields := make([][]byte, len(n.elems))
	seen := make([]bool, len(n.elems))
	for _, f := range u.Fields {
		i := slices.Index(n.udt.fields, f.Name.Name)
		if i < 0 {
			return nil, false, fmt.Errorf("unknown field %s in a literal of user type %s", cql.QuoteIdent(f.Name.Name), cql.QuoteIdent(n.udt.name))
		}
		if seen[i] {
			return nil, false, fmt.Errorf("field %s is given twice in a literal of user type %s", cql.QuoteIdent(f.Name.Name), cql.QuoteIdent(n.udt.name))
		}
		seen[i] = true
		et := n.elems[i]
		if lit, ok := f.Value.(*cql.Literal); ok && lit.Kind == cql.LitBind {
			if bind == nil {
				return nil, false, fmt.Errorf("bind marker %s has no value", lit.Value)
			}
			v, ok, err := bind(lit)
			switch {
			case err != nil:
				return nil, false, err
			case !ok:
				return nil, false, fmt.Errorf("bind marker %d for field %s is unset", lit.Index, f.Name.Name)
			case v != nil:
				if v, err = et.typ().Normalize(v); err != nil {
					return nil, false, fmt.Errorf("field %s: %w", f.Name.Name, err)
				}
			}
			fields[i] = v
			continue
		}
		v, mismatch, err := et.literal(f.Value, bind)
		switch {
		case mismatch:
			return nil, false, fmt.Errorf("field %s: cannot use %s as %s", f.Name.Name, describeTerm(f.Value), et.cqlName())
		case err != nil:
			return nil, false, fmt.Errorf("field %s: %w", f.Name.Name, err)
		}
		fields[i] = v
	}
	return udtValue(fields), false, nil
}

// userTypeResolver returns the resolver of user type names written in a statement on keyspace
// ks, against its types udts: name or ks.name (quoted or not).
func userTypeResolver(ks string, udts map[string]*UserType) func(string) (*typeNode, error) {
	return func(raw string) (*typeNode, error) {
		k, name := ks, unquoteName(raw)
		if i := strings.IndexByte(raw, '.'); i > 0 && !strings.HasPrefix(raw, `"`) {
			k, name = unquoteName(raw[:i]), unquoteName(raw[i+1:])
		}
		if k != ks {
			return nil, fmt.Errorf("user type %s.%s: a statement on keyspace %s cannot use a type of another keyspace", cql.QuoteIdent(k), cql.QuoteIdent(name), cql.QuoteIdent(ks))
		}
		u, ok := udts[name]
		if !ok {
			return nil, fmt.Errorf("unknown type %s", qualified(ks, name))
		}
		n, err := parseTypeName(string(u.Type()))
		if err != nil {
			return nil, fmt.Errorf("user type %s: %w", qualified(ks, name), err)
		}
		return n, nil
	}
}

func unquoteName(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}

// lookupTypeIn is LookupType for a statement on keyspace ks, whose user types are udts.
func lookupTypeIn(name, ks string, udts map[string]*UserType) (Type, error) {
	if len(udts) == 0 {
		return LookupType(name)
	}
	if t, err := LookupType(name); err == nil {
		return t, nil
	}
	n, err := parseTypeWith(name, userTypeResolver(ks, udts))
	if err != nil {
		return TypeInvalid, fmt.Errorf("type %q: %w", name, err)
	}
	if n.kind == NotParametric {
		return n.scalar, nil
	}
	return n.typ(), nil
}

// UserTypes returns k's user types, sorted by name.
func (k *Keyspace) UserTypes() []*UserType {
	out := make([]*UserType, 0, len(k.userTypes))
	for _, u := range k.userTypes {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b *UserType) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// UserType returns k's user type name.
func (k *Keyspace) UserType(name string) (*UserType, bool) {
	u, ok := k.userTypes[name]
	return u, ok
}

// typeKeyspace resolves the keyspace of a type statement and returns it live.
func (s *Schema) typeKeyspace(tn cql.TableName, current string) (*Keyspace, error) {
	ks, err := resolveKeyspace(tn, current)
	if err != nil {
		return nil, err
	}
	k, ok := s.Keyspace(ks)
	if !ok {
		return nil, unknownKeyspace(ks)
	}
	return k, nil
}

// withTypes returns the schema with keyspace k's user types udts, at version v: the keyspace
// entry altered, and every table and user type of k using a type whose definition changed
// rewritten with the new definitions.
func (s *Schema) withTypes(k *Keyspace, udts map[string]*UserType, changed string, c Change) (*Schema, error) {
	nk := *k
	nk.userTypes = udts
	nk.Altered = after(c.Version, k.LastChange())
	rewrite := func(t Type) (Type, error) {
		if changed == "" || !usesType(t, k.Name, changed) {
			return t, nil
		}
		return rewriteType(t, udts)
	}
	// The user types using the changed one, until none changes: each rewrite resolves the
	// current definitions, which may themselves be rewritten in a later pass.
	for range maxParamDepth + 1 {
		again := false
		for name, u := range udts {
			nu := *u
			nu.FieldTypes = slices.Clone(u.FieldTypes)
			diff := false
			for i, t := range u.FieldTypes {
				nt, err := rewrite(t)
				if err != nil {
					return nil, err
				}
				if nt != t {
					nu.FieldTypes[i], diff = nt, true
				}
			}
			if diff {
				udts[name], again = &nu, true
			}
		}
		if !again {
			break
		}
	}
	ks, ts := s.clone()
	ks[k.Name] = &nk
	for key, t := range ts {
		if key.keyspace != k.Name || t.dropped {
			continue
		}
		var nt *Table
		for i, col := range t.Columns {
			typ, err := rewrite(col.Type)
			if err != nil {
				return nil, err
			}
			if typ == col.Type {
				continue
			}
			if nt == nil {
				cp := *t
				cp.Version = after(c.Version, t.Version)
				cols := slices.Clone(t.Columns)
				cp.setColumns(cols, len(t.PartitionKey), len(t.Clustering))
				nt = &cp
			}
			nt.Columns[i].Type = typ
			nt.Columns[i].parsed = typ.node()
		}
		if nt != nil {
			ts[key] = nt
		}
	}
	return finishLevels(ks, ts, s.sl, s.gcBefore), nil
}

// rewriteType returns t with each user type in it replaced by its current definition in udts.
func rewriteType(t Type, udts map[string]*UserType) (Type, error) {
	n := t.node()
	if n == nil {
		return t, nil
	}
	var walk func(n *typeNode) (*typeNode, error)
	walk = func(n *typeNode) (*typeNode, error) {
		if n.kind == ParamUDT {
			u, ok := udts[n.udt.name]
			if !ok {
				return n, nil
			}
			return parseTypeName(string(u.Type()))
		}
		out := *n
		out.elems = make([]*typeNode, len(n.elems))
		for i, e := range n.elems {
			var err error
			if out.elems[i], err = walk(e); err != nil {
				return nil, err
			}
		}
		return &out, nil
	}
	nn, err := walk(n)
	if err != nil {
		return TypeInvalid, err
	}
	nn.multiCell = t.MultiCell() // node gave a non-frozen collection's value type
	return nn.typ(), nil
}

func (s *Schema) createType(st *cql.CreateTypeStmt, current string, c Change) (*Schema, error) {
	k, err := s.typeKeyspace(st.Name, current)
	if err != nil {
		return nil, err
	}
	name := st.Name.Name.Name
	if err := checkName("type", name); err != nil {
		return nil, err
	}
	if _, err := LookupType(name); err == nil || name == "udt" {
		return nil, fmt.Errorf("%s is a reserved type name", cql.QuoteIdent(name))
	}
	if _, ok := k.userTypes[name]; ok {
		if st.IfNotExists {
			return s, nil
		}
		return nil, fmt.Errorf("%w: a type %s already exists", ErrExists, qualified(k.Name, name))
	}
	u := &UserType{Keyspace: k.Name, Name: name}
	for _, f := range st.Fields {
		if err := u.addField(f, k); err != nil {
			return nil, err
		}
	}
	udts := cloneTypes(k.userTypes)
	udts[name] = u
	return s.withTypes(k, udts, "", c)
}

func (u *UserType) addField(f cql.ColumnDef, k *Keyspace) error {
	fn := f.Name.Name
	if err := checkName("field", fn); err != nil {
		return fmt.Errorf("type %s: %w", qualified(u.Keyspace, u.Name), err)
	}
	if slices.Contains(u.FieldNames, fn) {
		return fmt.Errorf("type %s: duplicate field name %s", qualified(u.Keyspace, u.Name), cql.QuoteIdent(fn))
	}
	n, err := parseTypeWith(f.Type.Name, userTypeResolver(k.Name, k.userTypes))
	if err != nil {
		return fmt.Errorf("type %s: field %s: %w", qualified(u.Keyspace, u.Name), cql.QuoteIdent(fn), err)
	}
	typ := n.scalar
	if n.kind != NotParametric {
		n.multiCell = false // a field's collection is frozen: a field is no column of its own
		typ = n.typ()
	}
	if usesType(typ, u.Keyspace, u.Name) {
		return fmt.Errorf("type %s: field %s cannot refer to the type itself", qualified(u.Keyspace, u.Name), cql.QuoteIdent(fn))
	}
	u.FieldNames = append(u.FieldNames, fn)
	u.FieldTypes = append(u.FieldTypes, typ)
	return nil
}

func cloneTypes(m map[string]*UserType) map[string]*UserType {
	out := make(map[string]*UserType, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *Schema) alterType(st *cql.AlterTypeStmt, current string, c Change) (*Schema, error) {
	k, err := s.typeKeyspace(st.Name, current)
	if err != nil {
		return nil, err
	}
	name := st.Name.Name.Name
	u, ok := k.userTypes[name]
	if !ok {
		return nil, fmt.Errorf("unknown type %s", qualified(k.Name, name))
	}
	nu := &UserType{Keyspace: u.Keyspace, Name: u.Name, FieldNames: slices.Clone(u.FieldNames), FieldTypes: slices.Clone(u.FieldTypes)}
	if st.Add != nil {
		// As in Cassandra: drivers serialize every field of a value, so a new field would give
		// the values they send for an existing partition different bytes, and another token.
		for _, t := range s.Tables(k.Name) {
			for _, col := range t.PartitionKey {
				if usesType(col.Type, k.Name, name) {
					return nil, fmt.Errorf("cannot add new field to type %s because it is used in the partition key column %s of table %s",
						qualified(k.Name, name), cql.QuoteIdent(col.Name), t.QualifiedName())
				}
			}
		}
		if err := nu.addField(*st.Add, k); err != nil {
			return nil, err
		}
	}
	for _, r := range st.Renames {
		i := slices.Index(nu.FieldNames, r.From.Name)
		if i < 0 {
			return nil, fmt.Errorf("type %s has no field %s", qualified(k.Name, name), cql.QuoteIdent(r.From.Name))
		}
		if err := checkName("field", r.To.Name); err != nil {
			return nil, err
		}
		if slices.Contains(nu.FieldNames, r.To.Name) {
			return nil, fmt.Errorf("type %s: duplicate field name %s", qualified(k.Name, name), cql.QuoteIdent(r.To.Name))
		}
		nu.FieldNames[i] = r.To.Name
	}
	udts := cloneTypes(k.userTypes)
	udts[name] = nu
	return s.withTypes(k, udts, name, c)
}

func (s *Schema) dropType(st *cql.DropTypeStmt, current string, c Change) (*Schema, error) {
	k, err := s.typeKeyspace(st.Name, current)
	if err != nil {
		if ks, _ := resolveKeyspace(st.Name, current); st.IfExists && !isSystemName(ks) && errors.Is(err, ErrUnknownKeyspace) {
			return s, nil
		}
		return nil, err
	}
	name := st.Name.Name.Name
	if _, ok := k.userTypes[name]; !ok {
		if st.IfExists {
			return s, nil
		}
		return nil, fmt.Errorf("unknown type %s", qualified(k.Name, name))
	}
	for _, u := range k.UserTypes() {
		for _, t := range u.FieldTypes {
			if u.Name != name && usesType(t, k.Name, name) {
				return nil, fmt.Errorf("cannot drop user type %s as it is still used by user type %s", qualified(k.Name, name), qualified(k.Name, u.Name))
			}
		}
	}
	for _, t := range s.Tables(k.Name) {
		for _, col := range t.Columns {
			if usesType(col.Type, k.Name, name) {
				return nil, fmt.Errorf("cannot drop user type %s as it is still used by table %s (column %s)", qualified(k.Name, name), t.QualifiedName(), cql.QuoteIdent(col.Name))
			}
		}
	}
	udts := cloneTypes(k.userTypes)
	delete(udts, name)
	return s.withTypes(k, udts, "", c)
}

// typeStatementName returns the type name a CREATE, ALTER or DROP TYPE statement names.
func typeStatementName(stmt cql.Statement) cql.TableName {
	switch st := stmt.(type) {
	case *cql.CreateTypeStmt:
		return st.Name
	case *cql.AlterTypeStmt:
		return st.Name
	case *cql.DropTypeStmt:
		return st.Name
	}
	return cql.TableName{}
}

// keyspaceTypesBit marks, in a keyspace's flags, a keyspace with user types: they follow its
// other fields (appendUserTypes).
const keyspaceTypesBit = 16

// appendUserTypes appends k's user types: a count, then per type in name order its name, a
// count of fields and per field its name and canonical type name.
func appendUserTypes(b []byte, k *Keyspace) []byte {
	us := k.UserTypes()
	b = binary.AppendUvarint(b, uint64(len(us)))
	for _, u := range us {
		b = appendString(b, u.Name)
		b = binary.AppendUvarint(b, uint64(len(u.FieldNames)))
		for i, f := range u.FieldNames {
			b = appendString(b, f)
			b = appendString(b, string(u.FieldTypes[i]))
		}
	}
	return b
}

// userTypes reads k's user types as appendUserTypes wrote them.
func (d *decoder) userTypes(k *Keyspace) error {
	n := d.count()
	k.userTypes = make(map[string]*UserType, n)
	prev := ""
	for i := 0; i < n && d.err == nil; i++ {
		u := &UserType{Keyspace: k.Name, Name: d.string()}
		nf := d.count()
		for j := 0; j < nf && d.err == nil; j++ {
			f, ts := d.string(), d.string()
			if d.err != nil {
				break
			}
			t, err := LookupType(ts)
			if err != nil || t.IsParametric() {
				t, err = parseParametric(ts)
			}
			if err == nil && string(t) != ts {
				err = errors.New("not in canonical form")
			}
			if err != nil {
				return fmt.Errorf("keyspace %q: type %q: field %q: type %q: %v", k.Name, u.Name, f, ts, err)
			}
			if checkName("field", f) != nil || slices.Contains(u.FieldNames, f) {
				return fmt.Errorf("keyspace %q: type %q: invalid or repeated field name %q", k.Name, u.Name, f)
			}
			u.FieldNames = append(u.FieldNames, f)
			u.FieldTypes = append(u.FieldTypes, t)
		}
		if d.err != nil {
			break
		}
		if checkName("type", u.Name) != nil || (i > 0 && u.Name <= prev) || nf == 0 {
			return fmt.Errorf("keyspace %q: type %q is out of order, unnamed or has no fields", k.Name, u.Name)
		}
		prev = u.Name
		k.userTypes[u.Name] = u
	}
	return d.err
}

// TypesInOrder returns k's user types, each after the types it uses (by name among equals), the
// order in which DESCRIBE creates them.
func (k *Keyspace) TypesInOrder() []*UserType {
	left := k.UserTypes()
	out := make([]*UserType, 0, len(left))
	done := map[string]bool{}
	for len(left) > 0 {
		next := left[:0]
		progress := false
		for _, u := range left {
			ready := true
			for _, o := range k.userTypes {
				if o.Name != u.Name && !done[o.Name] && slices.ContainsFunc(u.FieldTypes, func(t Type) bool { return usesType(t, k.Name, o.Name) }) {
					ready = false
				}
			}
			if ready {
				out, done[u.Name], progress = append(out, u), true, true
			} else {
				next = append(next, u)
			}
		}
		left = next
		if !progress { // cannot happen: types refer only to older types
			out = append(out, left...)
			break
		}
	}
	return out
}

func typeElement(u *UserType) Element {
	return Element{Keyspace: u.Keyspace, Type: "type", Name: u.Name, CreateStatement: u.CreateStatement()}
}

// lookupUserType finds the user type a DESCRIBE TYPE names.
func (s *Schema) lookupUserType(tn cql.TableName, current string) (*UserType, error) {
	k, err := s.typeKeyspace(tn, current)
	if err != nil {
		return nil, err
	}
	u, ok := k.userTypes[tn.Name.Name]
	if !ok {
		return nil, fmt.Errorf("unknown type %s", qualified(k.Name, tn.Name.Name))
	}
	return u, nil
}

// FormatUDT is the data format version from which a release of kvnode decodes user-defined
// types: a keyspace's types (keyspace flag 16) and columns of a type holding one (udt<...> in
// the type's name). A node of an older format refuses a schema with either, so coordinators
// refuse CREATE TYPE, and tables using a type, while a member of an older format remains.
const FormatUDT = 5

// UDTFormatFeatures returns the names of k's features that a release of a data format before
// FormatUDT cannot decode: its user types.
func (k *Keyspace) UDTFormatFeatures() []string {
	if k.dropped || len(k.userTypes) == 0 {
		return nil
	}
	return []string{"user-defined types"}
}

// UDTFormatFeatures returns the names of t's features that a release of a data format before
// FormatUDT cannot decode: its columns, dropped ones included, of a user type.
func (t *Table) UDTFormatFeatures() []string {
	if t.dropped {
		return nil
	}
	var fs []string
	for _, c := range t.Columns {
		if strings.Contains(string(c.Type), "udt<") {
			fs = append(fs, fmt.Sprintf("column %s of type %s", cql.QuoteIdent(c.Name), c.Type.CQL()))
		}
	}
	for _, c := range t.droppedCols {
		if strings.Contains(string(c.Type), "udt<") {
			fs = append(fs, fmt.Sprintf("a record of dropped column %s of type %s", cql.QuoteIdent(c.Name), c.Type.CQL()))
		}
	}
	return fs
}

// UserTypeOf returns the type of the user type keyspace.name with these fields, as a client that
// learnt it from the native protocol's UDT option knows it; an error for names or field types no
// user type can have.
func UserTypeOf(keyspace, name string, fields []string, types []Type) (Type, error) {
	if len(fields) == 0 || len(fields) != len(types) {
		return TypeInvalid, fmt.Errorf("user type %s: %d field names for %d types", qualified(keyspace, name), len(fields), len(types))
	}
	u := &UserType{Keyspace: keyspace, Name: name, FieldNames: fields, FieldTypes: types}
	t, err := parseParametric(string(u.Type()))
	if err != nil {
		return TypeInvalid, fmt.Errorf("user type %s: %w", qualified(keyspace, name), err)
	}
	return t, nil
}
