package cql

import (
	"slices"
	"strings"
)

// Format returns the canonical text of a node: keywords in upper case,
// identifiers quoted only when they must be, single spaces, ", " between
// list items, no trailing semicolon. For every statement s the parser
// accepts, parsing Format(s) gives s back (positions aside).
//
// Format accepts statements, terms (*Literal, *MapLiteral), Ident and
// TableName; it returns "" for other nodes.
func Format(n Node) string {
	var p printer
	p.node(n)
	return p.String()
}

// QuoteIdent returns name as it must be written in a statement: bare when
// it is a lower-case identifier that is not a reserved keyword, else in
// double quotes with embedded quotes doubled.
func QuoteIdent(name string) string {
	if isBareIdent(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func isBareIdent(name string) bool {
	if name == "" || !('a' <= name[0] && name[0] <= 'z') {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || isDigit(c) || c == '_') {
			return false
		}
	}
	return !Lookup(name).IsReserved()
}

// QuoteString returns s as a string literal: in single quotes, with
// embedded single quotes doubled.
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

type printer struct {
	strings.Builder
}

func (p *printer) node(n Node) {
	if p.authStatement(n) || p.levelStatement(n) {
		return
	}
	switch n := n.(type) {
	case *CreateKeyspaceStmt:
		p.WriteString("CREATE KEYSPACE ")
		if n.IfNotExists {
			p.WriteString("IF NOT EXISTS ")
		}
		p.ident(n.Name)
		p.options(n.Options)
	case *AlterKeyspaceStmt:
		p.WriteString("ALTER KEYSPACE ")
		if n.IfExists {
			p.WriteString("IF EXISTS ")
		}
		p.ident(n.Name)
		p.options(n.Options)
	case *DropKeyspaceStmt:
		p.WriteString("DROP KEYSPACE ")
		if n.IfExists {
			p.WriteString("IF EXISTS ")
		}
		p.ident(n.Name)
	case *UseStmt:
		p.WriteString("USE ")
		p.ident(n.Keyspace)
	case *CreateTableStmt:
		p.WriteString("CREATE TABLE ")
		if n.IfNotExists {
			p.WriteString("IF NOT EXISTS ")
		}
		p.table(n.Table)
		p.WriteString(" (")
		for i, c := range n.Columns {
			if i > 0 {
				p.WriteString(", ")
			}
			p.ident(c.Name)
			p.WriteByte(' ')
			p.WriteString(c.Type.Name)
			if c.Static {
				p.WriteString(" STATIC")
			}
			if c.PrimaryKey {
				p.WriteString(" PRIMARY KEY")
			}
		}
		if pk := n.PrimaryKey; pk != nil {
			if len(n.Columns) > 0 {
				p.WriteString(", ")
			}
			p.WriteString("PRIMARY KEY (")
			if len(pk.PartitionKey) == 1 {
				p.ident(pk.PartitionKey[0])
			} else {
				p.WriteByte('(')
				p.idents(pk.PartitionKey)
				p.WriteByte(')')
			}
			for _, c := range pk.Clustering {
				p.WriteString(", ")
				p.ident(c)
			}
			p.WriteByte(')')
		}
		p.WriteByte(')')
		if len(n.ClusteringOrder) > 0 {
			p.WriteString(" WITH CLUSTERING ORDER BY (")
			p.orderings(n.ClusteringOrder)
			p.WriteByte(')')
			for _, o := range n.Options {
				p.WriteString(" AND ")
				p.option(o)
			}
		} else {
			p.options(n.Options)
		}
	case *AlterTableStmt:
		p.alterTable(n)
	case *TruncateStmt:
		p.WriteString("TRUNCATE TABLE ")
		p.table(n.Table)
	case *CreateTypeStmt, *AlterTypeStmt, *DropTypeStmt:
		p.typeStatement(n)
	case *CreateIndexStmt, *DropIndexStmt:
		p.indexStatement(n)
	case *DropTableStmt:
		p.WriteString("DROP TABLE ")
		if n.IfExists {
			p.WriteString("IF EXISTS ")
		}
		p.table(n.Table)
	case *InsertStmt:
		p.WriteString("INSERT INTO ")
		p.table(n.Table)
		if n.JSON != nil {
			p.WriteString(" JSON ")
			p.node(n.JSON)
			if n.DefaultUnset {
				p.WriteString(" DEFAULT UNSET")
			}
			p.using(n.Timestamp, n.TTL, n.Timeout)
			break
		}
		p.WriteString(" (")
		p.idents(n.Columns)
		p.WriteString(") VALUES (")
		for i, v := range n.Values {
			if i > 0 {
				p.WriteString(", ")
			}
			p.node(v)
		}
		p.WriteByte(')')
		p.conditions(n.If)
		p.using(n.Timestamp, n.TTL, n.Timeout)
	case *UpdateStmt:
		p.WriteString("UPDATE ")
		p.table(n.Table)
		p.using(n.Timestamp, n.TTL, n.Timeout)
		p.WriteString(" SET ")
		for i, a := range n.Set {
			if i > 0 {
				p.WriteString(", ")
			}
			p.assignment(a)
		}
		p.where(n.Where)
		p.conditions(n.If)
	case *DeleteStmt:
		p.WriteString("DELETE ")
		for i, c := range n.Columns {
			if i > 0 {
				p.WriteString(", ")
			}
			p.ident(c)
			if n.Elements != nil && n.Elements[i] != nil {
				p.WriteByte('[')
				p.node(n.Elements[i])
				p.WriteByte(']')
			}
			if n.Fields != nil && n.Fields[i].Name != "" {
				p.WriteByte('.')
				p.ident(n.Fields[i])
			}
		}
		if len(n.Columns) > 0 {
			p.WriteByte(' ')
		}
		p.WriteString("FROM ")
		p.table(n.Table)
		p.using(n.Timestamp, nil, n.Timeout)
		p.where(n.Where)
		p.conditions(n.If)
	case *SelectStmt:
		p.WriteString("SELECT ")
		if n.JSON {
			p.WriteString("JSON ")
		}
		if n.Distinct {
			p.WriteString("DISTINCT ")
		}
		switch {
		case n.Star:
			p.WriteByte('*')
		case n.Funcs == nil && n.Aliases == nil:
			p.idents(n.Columns)
		default:
			for i, c := range n.Columns {
				if i > 0 {
					p.WriteString(", ")
				}
				kind := SelectColumn
				if n.Funcs != nil {
					kind = n.Funcs[i].Kind
				}
				switch kind {
				case SelectExpr:
					p.node(n.Funcs[i].Expr)
				case SelectElement:
					p.ident(c)
					p.elementSelection(n.Funcs[i].Element)
				case SelectAggregate:
					p.WriteString(strings.ToUpper(n.Funcs[i].Aggregate))
					p.WriteByte('(')
					if n.Funcs[i].Expr == nil {
						p.WriteByte('*')
					} else {
						p.node(n.Funcs[i].Expr)
					}
					p.WriteByte(')')
				case SelectWritetime, SelectTTL:
					if kind == SelectWritetime {
						p.WriteString("WRITETIME(")
					} else {
						p.WriteString("TTL(")
					}
					p.ident(c)
					p.WriteByte(')')
				default:
					p.ident(c)
				}
				if n.Aliases != nil && n.Aliases[i].Name != "" {
					p.WriteString(" AS ")
					p.ident(n.Aliases[i])
				}
			}
		}
		p.WriteString(" FROM ")
		p.table(n.Table)
		p.where(n.Where)
		if len(n.GroupBy) > 0 {
			p.WriteString(" GROUP BY ")
			p.idents(n.GroupBy)
		}
		if len(n.OrderBy) > 0 {
			p.WriteString(" ORDER BY ")
			p.orderings(n.OrderBy)
		}
		if n.PerPartitionLimit != nil {
			p.WriteString(" PER PARTITION LIMIT ")
			p.node(n.PerPartitionLimit)
		}
		if n.Limit != nil {
			p.WriteString(" LIMIT ")
			p.node(n.Limit)
		}
		if n.AllowFiltering {
			p.WriteString(" ALLOW FILTERING")
		}
		p.using(nil, nil, n.Timeout)
	case *BatchStmt:
		p.WriteString("BEGIN ")
		if n.Unlogged {
			p.WriteString("UNLOGGED ")
		}
		if n.Counter {
			p.WriteString("COUNTER ")
		}
		p.WriteString("BATCH")
		p.using(n.Timestamp, nil, n.Timeout)
		for _, c := range n.Statements {
			p.WriteByte(' ')
			p.node(c)
			p.WriteByte(';')
		}
		p.WriteString(" APPLY BATCH")
	case *DescribeStmt:
		p.WriteString("DESCRIBE ")
		p.WriteString(n.Kind.String())
		switch n.Kind {
		case DescribeKeyspace:
			if n.Keyspace.Name != "" {
				p.WriteByte(' ')
				p.ident(n.Keyspace)
			}
		case DescribeTable, DescribeType:
			p.WriteByte(' ')
			p.table(n.Table)
		}
		if n.Internals {
			p.WriteString(" WITH INTERNALS")
		}
	case *Literal:
		switch n.Kind {
		case LitString:
			p.WriteString(QuoteString(n.Value))
		case LitNull:
			p.WriteString("NULL")
		default:
			p.WriteString(n.Value)
		}
	case *MapLiteral:
		p.WriteByte('{')
		for i, e := range n.Entries {
			if i > 0 {
				p.WriteString(", ")
			}
			p.node(e.Key)
			p.WriteString(": ")
			p.node(e.Value)
		}
		p.WriteByte('}')
	case *UDTLiteral:
		p.WriteByte('{')
		for i, f := range n.Fields {
			if i > 0 {
				p.WriteString(", ")
			}
			p.ident(f.Name)
			p.WriteString(": ")
			p.node(f.Value)
		}
		p.WriteByte('}')
	case *CollectionLiteral:
		open, end := byte('('), byte(')')
		switch n.Kind {
		case ListLiteral:
			open, end = '[', ']'
		case SetLiteral:
			open, end = '{', '}'
		}
		p.WriteByte(open)
		for i, e := range n.Elements {
			if i > 0 {
				p.WriteString(", ")
			}
			p.node(e)
		}
		p.WriteByte(end)
	case *FuncCall:
		if n.System {
			p.WriteString("system.")
		}
		p.WriteString(QuoteIdent(n.Name))
		p.WriteByte('(')
		for i, a := range n.Args {
			if i > 0 {
				p.WriteString(", ")
			}
			p.node(a)
		}
		p.WriteByte(')')
	case *ColumnRef:
		p.ident(n.Column)
	case *Cast:
		p.WriteString("CAST(")
		p.node(n.Arg)
		p.WriteString(" AS ")
		p.WriteString(n.Type.Name)
		p.WriteByte(')')
	case Ident:
		p.ident(n)
	case TableName:
		p.table(n)
	}
}

func (p *printer) ident(x Ident) { p.WriteString(QuoteIdent(x.Name)) }

func (p *printer) idents(xs []Ident) {
	for i, x := range xs {
		if i > 0 {
			p.WriteString(", ")
		}
		p.ident(x)
	}
}

func (p *printer) table(t TableName) {
	if t.Keyspace.Name != "" {
		p.ident(t.Keyspace)
		p.WriteByte('.')
	}
	p.ident(t.Name)
}

func (p *printer) options(opts []Option) {
	for i, o := range opts {
		if i == 0 {
			p.WriteString(" WITH ")
		} else {
			p.WriteString(" AND ")
		}
		p.option(o)
	}
}

func (p *printer) option(o Option) {
	p.ident(o.Name)
	p.WriteString(" = ")
	p.node(o.Value)
}

// orderings prints c1 ASC, c2 DESC: always with the direction, which ORDER
// BY lets one leave out.
func (p *printer) orderings(os []Ordering) {
	for i, o := range os {
		if i > 0 {
			p.WriteString(", ")
		}
		p.ident(o.Column)
		if o.Descending {
			p.WriteString(" DESC")
		} else {
			p.WriteString(" ASC")
		}
	}
}

// using prints a USING clause: TIMESTAMP, then TIMEOUT, unless the
// timeout came first in the source (a bind marker's index follows the
// source order, which the text must keep).
func (p *printer) using(ts, ttl, timeout *Literal) {
	type item struct {
		kw  string
		lit *Literal
	}
	var items []item
	positioned := true
	for _, it := range []item{{"TIMESTAMP ", ts}, {"TTL ", ttl}, {"TIMEOUT ", timeout}} {
		if it.lit != nil {
			items = append(items, it)
			positioned = positioned && it.lit.ValuePos.IsValid()
		}
	}
	// In source order when every item has a position, so bind markers keep their order.
	if positioned {
		slices.SortStableFunc(items, func(a, b item) int { return a.lit.ValuePos.Offset - b.lit.ValuePos.Offset })
	}
	for i, it := range items {
		if i == 0 {
			p.WriteString(" USING ")
		} else {
			p.WriteString(" AND ")
		}
		p.WriteString(it.kw)
		p.node(it.lit)
	}
}

func (p *printer) where(rs []Relation) {
	for i, r := range rs {
		if i == 0 {
			p.WriteString(" WHERE ")
		} else {
			p.WriteString(" AND ")
		}
		switch {
		case r.Multi():
			p.WriteByte('(')
			p.idents(r.Columns)
			p.WriteByte(')')
		case r.Token != nil:
			p.ident(r.Column)
			p.WriteByte('(')
			p.idents(r.Token)
			p.WriteByte(')')
		default:
			p.ident(r.Column)
			if r.Element != nil {
				p.WriteByte('[')
				p.node(r.Element)
				p.WriteByte(']')
			}
		}
		p.WriteByte(' ')
		p.WriteString(r.Op.String())
		p.WriteByte(' ')
		if r.Op == IN && r.Value == nil {
			p.WriteByte('(')
			for j, v := range r.Values {
				if j > 0 {
					p.WriteString(", ")
				}
				p.node(v)
			}
			p.WriteByte(')')
			continue
		}
		p.node(r.Value)
	}
}

// assignment prints one item of UPDATE ... SET.
func (p *printer) assignment(a Assignment) {
	p.ident(a.Column)
	if a.Element != nil {
		p.WriteByte('[')
		p.node(a.Element)
		p.WriteByte(']')
	}
	if a.Field != nil {
		p.WriteByte('.')
		p.ident(*a.Field)
	}
	p.WriteString(" = ")
	switch {
	case a.Op == ILLEGAL:
		p.node(a.Value)
	case a.Prepend:
		p.node(a.Value)
		p.WriteString(" + ")
		p.ident(a.Column)
	default:
		p.ident(a.Column)
		p.WriteString(" " + a.Op.String() + " ")
		p.node(a.Value)
	}
}

// elementSelection prints [key] or [from..to].
func (p *printer) elementSelection(e *ElementSelection) {
	p.WriteByte('[')
	if !e.Slice {
		p.node(e.Key)
	} else {
		if e.From != nil {
			p.node(e.From)
		}
		p.WriteString("..")
		if e.To != nil {
			p.node(e.To)
		}
	}
	p.WriteByte(']')
}

// ElementSelectionString returns e as written after its column: "['k']", "[1..3]".
func ElementSelectionString(e *ElementSelection) string {
	var p printer
	p.elementSelection(e)
	return p.String()
}
