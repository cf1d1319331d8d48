package cql

import (
	"slices"
	"strings"
)

// Node is a node of the syntax tree.
type Node interface {
	// Pos returns the position of the node's first character.
	Pos() Pos
}

// Statement is one statement: one of the *...Stmt types.
type Statement interface {
	Node
	statementNode()
}

// Term is a value in a statement: a *Literal, a *MapLiteral, a *CollectionLiteral or a *FuncCall;
// in a SELECT list's function calls also a *ColumnRef or a *Cast.
type Term interface {
	Node
	termNode()
}

// Ident is an identifier: a keyspace, table, column, option or type name.
// Name is the identifier's value: unquoted identifiers are case-insensitive
// and stored lower-cased; quoted identifiers keep their case.
type Ident struct {
	NamePos Pos
	Name    string
}

// Pos returns the position of the identifier.
func (x Ident) Pos() Pos { return x.NamePos }

// TableName is a table name, qualified (ks.t) or not (t, Keyspace.Name "").
type TableName struct {
	Keyspace Ident
	Name     Ident
}

// Pos returns the position of the table name's first character.
func (x TableName) Pos() Pos {
	if x.Keyspace.Name != "" {
		return x.Keyspace.NamePos
	}
	return x.Name.NamePos
}

// LiteralKind is the kind of a literal.
type LiteralKind uint8

// The literal kinds.
const (
	LitString   LiteralKind = iota + 1 // 'abc'; Value is the unescaped text
	LitInteger                         // -42; Value as written
	LitFloat                           // 1.5e3, NaN, Infinity, -Infinity; Value as written (NaN and Infinity spelled so)
	LitBoolean                         // true; Value is "true" or "false"
	LitBlob                            // 0xcafe; Value is lower-cased, with its 0x prefix
	LitNull                            // NULL; Value is ""
	LitBind                            // a bind marker: ? or :name; Value is "?" or ":name" (name quoted as needed)
	LitUUID                            // 123e4567-e89b-12d3-a456-426614174000 (unquoted); Value is lower-cased
	LitDuration                        // 500ms, 1h30m; Value as written, lower-cased
)

var literalKinds = [...]string{
	LitString:   "string",
	LitInteger:  "integer",
	LitFloat:    "float",
	LitBoolean:  "boolean",
	LitBlob:     "blob",
	LitNull:     "null",
	LitBind:     "bind marker",
	LitUUID:     "uuid",
	LitDuration: "duration",
}

// String returns the kind's name as error messages use it: "string",
// "integer", "float", "boolean", "blob", "null", "bind marker", "uuid",
// "duration".
func (k LiteralKind) String() string {
	if int(k) < len(literalKinds) && literalKinds[k] != "" {
		return literalKinds[k]
	}
	return "invalid literal"
}

// Literal is a constant value, NULL, or a bind marker.
type Literal struct {
	ValuePos Pos
	Kind     LiteralKind
	Value    string
	// Index is, for a bind marker, its index among the markers of its
	// statement in source order, from 0: the index of the value that binds
	// it (a BATCH numbers the markers of all its statements together).
	// Format prints every statement's markers in source order, so parsing
	// Format's text gives the same indexes.
	Index int
}

// Pos returns the position of the literal.
func (x *Literal) Pos() Pos { return x.ValuePos }

// BindName returns the name of a named bind marker (:name), "" for ? and
// other literals.
func (x *Literal) BindName() string {
	if x.Kind != LitBind || !strings.HasPrefix(x.Value, ":") {
		return ""
	}
	name := x.Value[1:]
	if strings.HasPrefix(name, `"`) && len(name) >= 2 {
		name = strings.ReplaceAll(name[1:len(name)-1], `""`, `"`)
	}
	return name
}

// MapLiteral is a map constant, {key: value, ...}, as used by options.
type MapLiteral struct {
	Lbrace  Pos
	Entries []MapEntry
}

// Pos returns the position of the opening brace.
func (x *MapLiteral) Pos() Pos { return x.Lbrace }

// CollectionLiteral is a list [a, b], a set {a, b} or a tuple (a, b) constant. The empty set
// {} is an empty *MapLiteral, as in Cassandra's grammar.
type CollectionLiteral struct {
	Kind     CollectionLiteralKind
	Start    Pos
	Elements []Term
}

// Pos returns the position of the opening bracket, brace or parenthesis.
func (x *CollectionLiteral) Pos() Pos { return x.Start }

// CollectionLiteralKind says which literal a CollectionLiteral is.
type CollectionLiteralKind uint8

// The kinds of CollectionLiteral.
const (
	ListLiteral CollectionLiteralKind = iota + 1
	SetLiteral
	TupleLiteral
)

// String returns the kind's name as messages use it: "list", "set", "tuple".
func (k CollectionLiteralKind) String() string {
	switch k {
	case ListLiteral:
		return "list"
	case SetLiteral:
		return "set"
	case TupleLiteral:
		return "tuple"
	}
	return "collection"
}

// MapEntry is one key: value pair of a MapLiteral, in source order
// (duplicates are kept: whoever interprets the map rejects them).
type MapEntry struct {
	Key   Term
	Value Term
}

// FuncCall is a call of one of Cassandra's native functions: name(args),
// or system.name(args). As a value (of INSERT, UPDATE, DELETE or a WHERE
// relation) its arguments are terms; as a selector they may also be
// columns (*ColumnRef), WRITETIME or TTL calls (a FuncCall named writetime
// or ttl of one column) and casts.
type FuncCall struct {
	NamePos Pos
	// System is set when the name was written system.name.
	System bool
	// Name is the function's name: lower-cased unless quoted.
	Name   string
	Args   []Term
	Rparen Pos
}

// Pos returns the position of the function's name.
func (x *FuncCall) Pos() Pos { return x.NamePos }

// ColumnRef is a column named in a selector's function call: blobAsInt(v).
type ColumnRef struct {
	Column Ident
}

// Pos returns the position of the column's name.
func (x *ColumnRef) Pos() Pos { return x.Column.NamePos }

// Cast is CAST(selector AS type), a selector.
type Cast struct {
	CastPos Pos
	Arg     Term
	Type    Ident // lower-cased, as ColumnDef.Type
}

// Pos returns the position of CAST.
func (x *Cast) Pos() Pos { return x.CastPos }

func (*Literal) termNode()           {}
func (*MapLiteral) termNode()        {}
func (*CollectionLiteral) termNode() {}
func (*FuncCall) termNode()          {}
func (*ColumnRef) termNode()         {}
func (*Cast) termNode()              {}

// Option is one name = value pair of a WITH clause.
type Option struct {
	Name  Ident // lower-cased unless quoted
	Value Term
}

// CreateKeyspaceStmt is CREATE KEYSPACE [IF NOT EXISTS] name WITH options.
type CreateKeyspaceStmt struct {
	Start       Pos
	IfNotExists bool
	Name        Ident
	Options     []Option // at least one
}

// AlterKeyspaceStmt is ALTER KEYSPACE [IF EXISTS] name WITH options.
type AlterKeyspaceStmt struct {
	Start    Pos
	IfExists bool
	Name     Ident
	Options  []Option // at least one
}

// DropKeyspaceStmt is DROP KEYSPACE [IF EXISTS] name.
type DropKeyspaceStmt struct {
	Start    Pos
	IfExists bool
	Name     Ident
}

// UseStmt is USE keyspace.
type UseStmt struct {
	Start    Pos
	Keyspace Ident
}

// ColumnDef is one column definition of CREATE TABLE: name type
// [PRIMARY KEY].
type ColumnDef struct {
	Name Ident
	// Type is the type as written, lower-cased, with any parameters in a
	// canonical spelling: "text", "map<text, int>".
	Type       Ident
	PrimaryKey bool // the column was declared inline as the PRIMARY KEY
	Static     bool // the column was declared STATIC
}

// PrimaryKey is a PRIMARY KEY (...) clause of CREATE TABLE:
// PRIMARY KEY (a, c) or PRIMARY KEY ((a, b), c, d).
type PrimaryKey struct {
	Start        Pos
	PartitionKey []Ident // at least one
	Clustering   []Ident
}

// Ordering is one column and its direction in CLUSTERING ORDER BY or
// ORDER BY: c ASC or c DESC.
type Ordering struct {
	Column     Ident
	Descending bool // DESC; ASC (written, or left out in ORDER BY) is false
}

// CreateTableStmt is CREATE TABLE [IF NOT EXISTS] name (columns
// [, PRIMARY KEY (...)]) [WITH options], where the options may include
// CLUSTERING ORDER BY (c1 ASC|DESC, ...), joined to the others by AND.
type CreateTableStmt struct {
	Start       Pos
	IfNotExists bool
	Table       TableName
	Columns     []ColumnDef
	PrimaryKey  *PrimaryKey // nil when the key is declared inline or missing
	// ClusteringOrder is the CLUSTERING ORDER BY clause: nil without one,
	// else one entry per clustering column, in primary key order (the
	// parser checks this when the PRIMARY KEY clause names the clustering
	// columns).
	ClusteringOrder []Ordering
	Options         []Option // the name = value options
}

// AlterAction says what an ALTER TABLE statement changes.
type AlterAction uint8

// The ALTER TABLE actions.
const (
	AlterOptions AlterAction = iota // WITH options
	AlterAdd                        // ADD column type | ADD (column type, ...)
	AlterDrop                       // DROP column | DROP (column, ...) [USING TIMESTAMP n]
	AlterRename                     // RENAME column TO name [AND column TO name ...]
)

// Rename is one column TO name of ALTER TABLE ... RENAME.
type Rename struct {
	From, To Ident
}

// AlterTableStmt is ALTER TABLE [IF EXISTS] name followed by one action:
// WITH options, ADD [IF NOT EXISTS] columns, DROP [IF EXISTS] columns
// [USING TIMESTAMP n] or RENAME [IF EXISTS] column TO name [AND ...].
type AlterTableStmt struct {
	Start    Pos
	IfExists bool // ALTER TABLE IF EXISTS
	Table    TableName
	Action   AlterAction
	// IfColumn is ADD IF NOT EXISTS, DROP IF EXISTS or RENAME IF EXISTS:
	// columns that exist (ADD) or not (DROP, RENAME) are skipped.
	IfColumn bool
	Options  []Option    // AlterOptions: at least one
	Add      []ColumnDef // AlterAdd: at least one
	// Parens says the ADD or DROP list was written in parentheses.
	Parens    bool
	Drop      []Ident  // AlterDrop: at least one
	Timestamp *Literal // AlterDrop: USING TIMESTAMP n (an integer), or nil
	Rename    []Rename // AlterRename: at least one
}

// TruncateStmt is TRUNCATE [TABLE] name.
type TruncateStmt struct {
	Start Pos
	Table TableName
}

// DropTableStmt is DROP TABLE [IF EXISTS] name.
type DropTableStmt struct {
	Start    Pos
	IfExists bool
	Table    TableName
}

// InsertStmt is INSERT INTO name (columns) VALUES (values)
// [USING TIMESTAMP n [AND TTL t] [AND TIMEOUT d]] (the USING items in any
// order).
type InsertStmt struct {
	Start   Pos
	Table   TableName
	Columns []Ident
	Values  []Term
	// JSON is, for INSERT INTO t JSON value, the value: a string literal or
	// a bind marker (Columns and Values are then empty); nil otherwise.
	JSON Term
	// DefaultUnset is DEFAULT UNSET after INSERT JSON: columns the JSON
	// leaves out keep their values (DEFAULT NULL, the default, sets them
	// null).
	DefaultUnset bool
	Timestamp    *Literal // nil without USING TIMESTAMP; else an integer or bind marker
	TTL          *Literal // nil without USING TTL; else an integer in [0, MaxTTL] or bind marker
	Timeout      *Literal // nil without USING TIMEOUT; else a duration

	If *Conditions // the IF clause; nil without one
}

// Assignment is one item of UPDATE ... SET: column = value, column[element] = value
// (Element set), or an operation on the column's current value (Op set): column = column + value,
// column = column - value, or with Prepend column = value + column. Counters and non-frozen
// collections both take operations; the schema decides what each means for a column.
type Assignment struct {
	Column Ident
	// Element is the map key or list index of column[element] = value; nil otherwise.
	Element Term
	// Field is the field of column.field = value (a non-frozen user type's); nil otherwise.
	Field *Ident
	// Op is PLUS or MINUS for an operation, ILLEGAL (the zero Token) for an assignment.
	Op Token
	// OpPos is the position of the operator.
	OpPos Pos
	// Prepend says the value comes first: column = value + column (Op is PLUS).
	Prepend bool
	Value   Term
}

// Relation is one column op value restriction of a WHERE clause, or with
// Token set a restriction of the partition key's token: token(Token...) op
// value, Column then being the word token.
type Relation struct {
	Column Ident
	// Columns is set for a relation on a tuple of columns, (a, b) op value:
	// Column is then Columns[0], and each value is a tuple.
	Columns []Ident
	// Token is set for token(k1, k2) op value: the columns in the call
	// (Column is then the word token).
	Token []Ident
	OpPos Pos
	Op    Token // EQ, LT, LE, GT, GE or IN
	// Value is the right side; for IN, nil with IN (v, ...) and the marker
	// of the whole list with IN ?.
	Value Term
	// Values are the values of IN (v, ...), in source order.
	Values []Term
	// Element is set for a relation on a map's entry, m[key] = value: the key.
	Element Term
}

// Multi reports whether r is on a tuple of columns.
func (r *Relation) Multi() bool { return len(r.Columns) > 0 }

// UpdateStmt is UPDATE name [USING TIMESTAMP n [AND TTL t] [AND TIMEOUT
// d]] SET assignments WHERE relations.
type UpdateStmt struct {
	Start     Pos
	Table     TableName
	Timestamp *Literal // nil without USING TIMESTAMP
	TTL       *Literal // nil without USING TTL; else an integer in [0, MaxTTL] or bind marker
	Timeout   *Literal // nil without USING TIMEOUT
	Set       []Assignment
	Where     []Relation

	If *Conditions // the IF clause; nil without one
}

// DeleteStmt is DELETE [columns] FROM name [USING TIMESTAMP n [AND
// TIMEOUT d]] WHERE relations.
type DeleteStmt struct {
	Start   Pos
	Columns []Ident // empty: delete rows
	// Elements is nil when every deleted column is whole; else it has one entry per Columns
	// entry: the map key or list index of DELETE column[element], or nil for a whole column.
	Elements []Term
	// Fields is nil when no item is column.field; else it has one entry per Columns entry: the
	// field of DELETE column.field, or an Ident with an empty Name.
	Fields    []Ident
	Table     TableName
	Timestamp *Literal // nil without USING TIMESTAMP
	Timeout   *Literal // nil without USING TIMEOUT
	Where     []Relation

	If *Conditions // the IF clause; nil without one
}

// SelectStmt is SELECT * | columns FROM name [WHERE relations]
// [ORDER BY column [ASC|DESC], ...] [LIMIT n] [ALLOW FILTERING]
// [USING TIMEOUT d].
type SelectStmt struct {
	Start   Pos
	Star    bool    // SELECT *
	Columns []Ident // when not Star
	// Funcs is nil when every item of the list is a plain column; else it
	// has one entry per Columns entry, saying whether the item is the
	// column, WRITETIME(column) or TTL(column).
	Funcs []SelectFunc
	// Aliases is nil without AS; else it has one entry per Columns entry,
	// with an empty Name for an item without an alias.
	Aliases  []Ident
	Distinct bool // SELECT DISTINCT
	JSON     bool // SELECT JSON: each row as one JSON object
	Table    TableName
	Where    []Relation
	GroupBy  []Ident    // nil without GROUP BY
	OrderBy  []Ordering // nil without ORDER BY; no column appears twice
	// PerPartitionLimit is nil without PER PARTITION LIMIT; else an
	// integer or bind marker.
	PerPartitionLimit *Literal
	Limit             *Literal // nil without LIMIT; else an integer or bind marker
	AllowFiltering    bool     // ALLOW FILTERING
	Timeout           *Literal // nil without USING TIMEOUT; else a duration
}

// SelectKind says what a SELECT list item returns of its column.
type SelectKind uint8

// The kinds of SELECT list items.
const (
	SelectColumn    SelectKind = iota // the column's value
	SelectWritetime                   // WRITETIME(column): its write timestamp, a bigint
	SelectTTL                         // TTL(column): its remaining time to live in seconds, an int
	SelectExpr                        // a function call or CAST: SelectFunc.Expr
	// SelectAggregate is an aggregate, SelectFunc.Aggregate of
	// SelectFunc.Expr (nil for COUNT(*) and COUNT(1)).
	SelectAggregate
	SelectElement // column[key] or column[from..to]: SelectFunc.Element
)

// SelectFunc is the function, if any, applied to one column of a SELECT
// list: Kind SelectColumn for none; Pos is the function name's position.
// For Kind SelectExpr, Expr is the selector (a *FuncCall or *Cast) and the
// item's SelectStmt.Columns entry is an Ident with an empty Name at Pos.
type SelectFunc struct {
	Kind SelectKind
	Pos  Pos
	Expr Term
	// Aggregate is, for Kind SelectAggregate, the aggregate's name: count,
	// min, max, sum or avg.
	Aggregate string
	// Element is the selection of Kind SelectElement.
	Element *ElementSelection
}

// ElementSelection is column[Key] (an element of a map or set) or, with Slice,
// column[From..To] (a slice of one; From or To nil for an open end).
type ElementSelection struct {
	Key      Term
	Slice    bool
	From, To Term
}

// BatchStmt is BEGIN [UNLOGGED | LOGGED] BATCH [USING TIMESTAMP n [AND
// TIMEOUT d]] statement [;] ... APPLY BATCH, where each statement is an
// INSERT, UPDATE or DELETE.
type BatchStmt struct {
	Start     Pos
	Unlogged  bool     // BEGIN UNLOGGED BATCH; a BATCH is logged otherwise
	Timestamp *Literal // nil without USING TIMESTAMP; else an integer or bind marker
	Timeout   *Literal // nil without USING TIMEOUT; else a duration
	// Counter is set for BEGIN COUNTER BATCH, whose statements all update counters.
	Counter bool
	// Statements are the batch's writes, in order: *InsertStmt,
	// *UpdateStmt or *DeleteStmt; at least one.
	Statements []Statement
}

// DescribeKind says what a DESCRIBE statement describes.
type DescribeKind uint8

// The DESCRIBE variants.
const (
	DescribeKeyspaces DescribeKind = iota + 1 // DESCRIBE KEYSPACES
	DescribeKeyspace                          // DESCRIBE KEYSPACE [ks]
	DescribeTables                            // DESCRIBE TABLES
	DescribeTable                             // DESCRIBE TABLE [ks.]t
	DescribeCluster                           // DESCRIBE CLUSTER
	DescribeSchema                            // DESCRIBE [FULL] SCHEMA
	DescribeType                              // DESCRIBE TYPE [ks.]t
	DescribeTypes                             // DESCRIBE TYPES
)

var describeKinds = [...]string{
	DescribeKeyspaces: "KEYSPACES",
	DescribeKeyspace:  "KEYSPACE",
	DescribeTables:    "TABLES",
	DescribeTable:     "TABLE",
	DescribeCluster:   "CLUSTER",
	DescribeSchema:    "SCHEMA",
	DescribeType:      "TYPE",
	DescribeTypes:     "TYPES",
}

// String returns the keyword that follows DESCRIBE for k.
func (k DescribeKind) String() string {
	if int(k) < len(describeKinds) && describeKinds[k] != "" {
		return describeKinds[k]
	}
	return "invalid"
}

// DescribeStmt is DESCRIBE (or DESC) KEYSPACES | KEYSPACE [ks] | TABLES |
// TABLE name | CLUSTER | [FULL] SCHEMA, optionally followed by WITH
// INTERNALS.
type DescribeStmt struct {
	Start    Pos
	Kind     DescribeKind
	Keyspace Ident     // DescribeKeyspace; Name "" means the current keyspace
	Table    TableName // DescribeTable; the type's name for DescribeType
	// Internals is WITH INTERNALS (which gocql sends on every metadata
	// refresh): the answer is then rows of (keyspace_name, type, name,
	// create_statement), one per keyspace and table, as Cassandra 4's
	// server-side DESCRIBE gives.
	Internals bool
}

// Pos returns the position of the statement's first keyword.
func (s *CreateKeyspaceStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *AlterKeyspaceStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *DropKeyspaceStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *UseStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *CreateTableStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *AlterTableStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *DropTableStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *TruncateStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *InsertStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *UpdateStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *DeleteStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *SelectStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *DescribeStmt) Pos() Pos { return s.Start }

// Pos returns the position of the statement's first keyword.
func (s *BatchStmt) Pos() Pos { return s.Start }

func (*CreateKeyspaceStmt) statementNode() {}
func (*AlterKeyspaceStmt) statementNode()  {}
func (*DropKeyspaceStmt) statementNode()   {}
func (*UseStmt) statementNode()            {}
func (*CreateTableStmt) statementNode()    {}
func (*AlterTableStmt) statementNode()     {}
func (*DropTableStmt) statementNode()      {}
func (*TruncateStmt) statementNode()       {}
func (*InsertStmt) statementNode()         {}
func (*UpdateStmt) statementNode()         {}
func (*DeleteStmt) statementNode()         {}
func (*SelectStmt) statementNode()         {}
func (*DescribeStmt) statementNode()       {}
func (*BatchStmt) statementNode()          {}

// BindMarkers returns the bind markers of s in index order (source
// order): BindMarkers(s)[i].Index == i.
func BindMarkers(s Statement) []*Literal {
	var list []*Literal
	var term func(Term)
	term = func(t Term) {
		switch t := t.(type) {
		case *Literal:
			if t != nil && t.Kind == LitBind {
				list = append(list, t)
			}
		case *MapLiteral:
			for _, e := range t.Entries {
				term(e.Key)
				term(e.Value)
			}
		case *CollectionLiteral:
			for _, e := range t.Elements {
				term(e)
			}
		case *FuncCall:
			for _, a := range t.Args {
				term(a)
			}
		case *Cast:
			term(t.Arg)
		}
	}
	options := func(opts []Option) {
		for _, o := range opts {
			term(o.Value)
		}
	}
	where := func(rs []Relation) {
		for _, r := range rs {
			if r.Element != nil {
				term(r.Element)
			}
			if r.Value != nil {
				term(r.Value)
			}
			for _, v := range r.Values {
				term(v)
			}
		}
	}
	lit := func(l *Literal) {
		if l != nil {
			term(l)
		}
	}
	var walk func(Statement)
	walk = func(s Statement) {
		switch s := s.(type) {
		case *CreateKeyspaceStmt:
			options(s.Options)
		case *AlterKeyspaceStmt:
			options(s.Options)
		case *CreateTableStmt:
			options(s.Options)
		case *AlterTableStmt:
			options(s.Options)
		case *InsertStmt:
			if s.JSON != nil {
				term(s.JSON)
			}
			for _, v := range s.Values {
				term(v)
			}
			lit(s.Timestamp)
			lit(s.TTL)
		case *UpdateStmt:
			lit(s.Timestamp)
			lit(s.TTL)
			for _, a := range s.Set {
				if a.Element != nil {
					term(a.Element)
				}
				term(a.Value)
			}
			where(s.Where)
			conditionMarkers(s.If, term)
		case *DeleteStmt:
			for _, e := range s.Elements {
				if e != nil {
					term(e)
				}
			}
			lit(s.Timestamp)
			where(s.Where)
			conditionMarkers(s.If, term)
		case *SelectStmt:
			for _, f := range s.Funcs {
				if f.Expr != nil {
					term(f.Expr)
				}
				if e := f.Element; e != nil {
					for _, x := range []Term{e.Key, e.From, e.To} {
						if x != nil {
							term(x)
						}
					}
				}
			}
			where(s.Where)
			lit(s.PerPartitionLimit)
			lit(s.Limit)
		case *BatchStmt:
			lit(s.Timestamp)
			for _, c := range s.Statements {
				walk(c)
			}
		}
	}
	walk(s)
	slices.SortStableFunc(list, func(a, b *Literal) int { return a.Index - b.Index })
	return list
}
