// Package cqlsh is kvnode's CQL shell, `kvnode cql`: a cqlsh-like client over the CQL native
// protocol (by default) or, with --protocol grpc, over package client. Both print the same.
//
// Run is the whole command. The pieces behind it:
//
//	split.go        splitter: input text to statements, cut at top-level ';' with the cql scanner
//	                (';' inside 'strings', "quoted names" and comments does not count); shell
//	                commands end at the end of their line
//	session.go      session: the state machine every mode shares. feed(text) runs the statements
//	                the text completes; prompt() says what the terminal shows next; interrupt()
//	                drops a half-typed statement. Shell commands CONSISTENCY, HELP, EXIT, QUIT
//	format.go       rows as an aligned table, cell values
//	errors.go       one line per failure, starting with its kind (InvalidRequest, Unavailable,
//	                Timeout, RateLimited, ConnectionError, ServerError, ShellError, Cancelled)
//	run.go          flags, connecting, the non-interactive modes (-e, -f, stdin)
//	native.go       nativeConn: one native protocol connection over kvnode's cqlwire codec (not a
//	                driver: gocql refuses USE), answers turned into client.Result and the
//	                client's error types so the rest of the shell cannot tell the protocols apart
//	interactive.go  the readline loop: only moves lines, prompts and Ctrl-C to the session
//
// Non-interactive runs stop at the first failure and print it as "source:line: Kind: message"
// (no prefix for -e), where line is the line the statement starts on and positions inside the
// message count from the statement's start, as in cqlsh. At the terminal, failures print as
// "Kind: message" and the shell carries on.
package cqlsh
