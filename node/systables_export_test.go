package node

import "github.com/kvnode/kvnode/coordinator/shell"

// ExecutorForTest returns the node's executor, so tests can check the domain API's typed results
// (the gRPC client API decodes them).
func (n *Node) ExecutorForTest() *shell.Executor { return n.exec }
