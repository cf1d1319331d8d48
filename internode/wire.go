package internode

import (
	"google.golang.org/protobuf/proto"

	"github.com/kvnode/kvnode/proto/replicapb"
)

// The four switches below put messages into the Request and Response oneofs and take them out:
// one case per oneof field in each (a kind added to internode.proto adds a line to each, and
// TestWireSwitchesCoverEveryKind fails until it does). They are written out, not driven by
// protoreflect, because setting and reading a oneof field through protoreflect costs about
// 170 ns a time, and these run four times per call on the hot path (BenchmarkWrap).
//
// The data path's kinds (mutate, read, account_delta) put the envelope and its oneof wrapper in
// one allocation instead of two.

// wrapRequest returns a Request carrying req, or false when req is of no kind.
func wrapRequest(req proto.Message) (*replicapb.Request, bool) {
	switch m := req.(type) {
	case *replicapb.MutateRequest:
		e := &struct {
			r replicapb.Request
			w replicapb.Request_Mutate
		}{w: replicapb.Request_Mutate{Mutate: m}}
		e.r.Msg = &e.w
		return &e.r, true
	case *replicapb.ReadRequest:
		e := &struct {
			r replicapb.Request
			w replicapb.Request_Read
		}{w: replicapb.Request_Read{Read: m}}
		e.r.Msg = &e.w
		return &e.r, true
	case *replicapb.AccountDeltaRequest:
		e := &struct {
			r replicapb.Request
			w replicapb.Request_AccountDelta
		}{w: replicapb.Request_AccountDelta{AccountDelta: m}}
		e.r.Msg = &e.w
		return &e.r, true
	case *replicapb.RangeReadRequest:
		return &replicapb.Request{Msg: &replicapb.Request_RangeRead{RangeRead: m}}, true
	case *replicapb.CounterUpdateRequest:
		return &replicapb.Request{Msg: &replicapb.Request_CounterUpdate{CounterUpdate: m}}, true
	case *replicapb.StoreBatchRequest:
		return &replicapb.Request{Msg: &replicapb.Request_StoreBatch{StoreBatch: m}}, true
	case *replicapb.RemoveBatchRequest:
		return &replicapb.Request{Msg: &replicapb.Request_RemoveBatch{RemoveBatch: m}}, true
	case *replicapb.TopPartitionsRequest:
		return &replicapb.Request{Msg: &replicapb.Request_TopPartitions{TopPartitions: m}}, true
	case *replicapb.ScopeCountsRequest:
		return &replicapb.Request{Msg: &replicapb.Request_ScopeCounts{ScopeCounts: m}}, true
	case *replicapb.TopClientsRequest:
		return &replicapb.Request{Msg: &replicapb.Request_TopClients{TopClients: m}}, true
	case *replicapb.SchemaPrepareRequest:
		return &replicapb.Request{Msg: &replicapb.Request_SchemaPrepare{SchemaPrepare: m}}, true
	case *replicapb.SchemaAcceptRequest:
		return &replicapb.Request{Msg: &replicapb.Request_SchemaAccept{SchemaAccept: m}}, true
	case *replicapb.PaxosPrepareRequest:
		return &replicapb.Request{Msg: &replicapb.Request_PaxosPrepare{PaxosPrepare: m}}, true
	case *replicapb.PaxosProposeRequest:
		return &replicapb.Request{Msg: &replicapb.Request_PaxosPropose{PaxosPropose: m}}, true
	case *replicapb.PaxosCommitRequest:
		return &replicapb.Request{Msg: &replicapb.Request_PaxosCommit{PaxosCommit: m}}, true
	case *replicapb.PullRequest:
		return &replicapb.Request{Msg: &replicapb.Request_Pull{Pull: m}}, true
	case *replicapb.FetchRequest:
		return &replicapb.Request{Msg: &replicapb.Request_Fetch{Fetch: m}}, true
	case *replicapb.ViewRequest:
		return &replicapb.Request{Msg: &replicapb.Request_View{View: m}}, true
	case *replicapb.RangeHashesRequest:
		return &replicapb.Request{Msg: &replicapb.Request_RangeHashes{RangeHashes: m}}, true
	case *replicapb.PartitionHashesRequest:
		return &replicapb.Request{Msg: &replicapb.Request_PartitionHashes{PartitionHashes: m}}, true
	case *replicapb.FetchPartitionsRequest:
		return &replicapb.Request{Msg: &replicapb.Request_FetchPartitions{FetchPartitions: m}}, true
	case *replicapb.RemovedRequest:
		return &replicapb.Request{Msg: &replicapb.Request_Removed{Removed: m}}, true
	case *replicapb.AnnounceRequest:
		return &replicapb.Request{Msg: &replicapb.Request_Announce{Announce: m}}, true
	case *replicapb.ForwardMutateRequest:
		return &replicapb.Request{Msg: &replicapb.Request_ForwardMutate{ForwardMutate: m}}, true
	}
	return nil, false
}

// requestMsg returns the message r carries, or nil when it carries none this switch knows.
func requestMsg(r *replicapb.Request) proto.Message {
	switch m := r.GetMsg().(type) {
	case *replicapb.Request_Mutate:
		return m.Mutate
	case *replicapb.Request_Read:
		return m.Read
	case *replicapb.Request_AccountDelta:
		return m.AccountDelta
	case *replicapb.Request_RangeRead:
		return m.RangeRead
	case *replicapb.Request_CounterUpdate:
		return m.CounterUpdate
	case *replicapb.Request_StoreBatch:
		return m.StoreBatch
	case *replicapb.Request_RemoveBatch:
		return m.RemoveBatch
	case *replicapb.Request_TopPartitions:
		return m.TopPartitions
	case *replicapb.Request_ScopeCounts:
		return m.ScopeCounts
	case *replicapb.Request_TopClients:
		return m.TopClients
	case *replicapb.Request_SchemaPrepare:
		return m.SchemaPrepare
	case *replicapb.Request_SchemaAccept:
		return m.SchemaAccept
	case *replicapb.Request_PaxosPrepare:
		return m.PaxosPrepare
	case *replicapb.Request_PaxosPropose:
		return m.PaxosPropose
	case *replicapb.Request_PaxosCommit:
		return m.PaxosCommit
	case *replicapb.Request_Pull:
		return m.Pull
	case *replicapb.Request_Fetch:
		return m.Fetch
	case *replicapb.Request_View:
		return m.View
	case *replicapb.Request_RangeHashes:
		return m.RangeHashes
	case *replicapb.Request_PartitionHashes:
		return m.PartitionHashes
	case *replicapb.Request_FetchPartitions:
		return m.FetchPartitions
	case *replicapb.Request_Removed:
		return m.Removed
	case *replicapb.Request_Announce:
		return m.Announce
	case *replicapb.Request_ForwardMutate:
		return m.ForwardMutate
	}
	return nil
}

// wrapResponse returns a Response carrying resp, or false when resp answers no kind.
func wrapResponse(resp proto.Message) (*replicapb.Response, bool) {
	switch m := resp.(type) {
	case *replicapb.MutateResponse:
		e := &struct {
			r replicapb.Response
			w replicapb.Response_Mutate
		}{w: replicapb.Response_Mutate{Mutate: m}}
		e.r.Msg = &e.w
		return &e.r, true
	case *replicapb.ReadResponse:
		e := &struct {
			r replicapb.Response
			w replicapb.Response_Read
		}{w: replicapb.Response_Read{Read: m}}
		e.r.Msg = &e.w
		return &e.r, true
	case *replicapb.AccountDeltaResponse:
		e := &struct {
			r replicapb.Response
			w replicapb.Response_AccountDelta
		}{w: replicapb.Response_AccountDelta{AccountDelta: m}}
		e.r.Msg = &e.w
		return &e.r, true
	case *replicapb.RangeReadResponse:
		return &replicapb.Response{Msg: &replicapb.Response_RangeRead{RangeRead: m}}, true
	case *replicapb.CounterUpdateResponse:
		return &replicapb.Response{Msg: &replicapb.Response_CounterUpdate{CounterUpdate: m}}, true
	case *replicapb.BatchlogResponse:
		return &replicapb.Response{Msg: &replicapb.Response_Batchlog{Batchlog: m}}, true
	case *replicapb.TopPartitionsResponse:
		return &replicapb.Response{Msg: &replicapb.Response_TopPartitions{TopPartitions: m}}, true
	case *replicapb.ScopeCountsResponse:
		return &replicapb.Response{Msg: &replicapb.Response_ScopeCounts{ScopeCounts: m}}, true
	case *replicapb.TopClientsResponse:
		return &replicapb.Response{Msg: &replicapb.Response_TopClients{TopClients: m}}, true
	case *replicapb.SchemaPrepareResponse:
		return &replicapb.Response{Msg: &replicapb.Response_SchemaPrepare{SchemaPrepare: m}}, true
	case *replicapb.SchemaAcceptResponse:
		return &replicapb.Response{Msg: &replicapb.Response_SchemaAccept{SchemaAccept: m}}, true
	case *replicapb.PaxosPrepareResponse:
		return &replicapb.Response{Msg: &replicapb.Response_PaxosPrepare{PaxosPrepare: m}}, true
	case *replicapb.PaxosProposeResponse:
		return &replicapb.Response{Msg: &replicapb.Response_PaxosPropose{PaxosPropose: m}}, true
	case *replicapb.PaxosCommitResponse:
		return &replicapb.Response{Msg: &replicapb.Response_PaxosCommit{PaxosCommit: m}}, true
	case *replicapb.PullChunk:
		return &replicapb.Response{Msg: &replicapb.Response_Pull{Pull: m}}, true
	case *replicapb.FetchResponse:
		return &replicapb.Response{Msg: &replicapb.Response_Fetch{Fetch: m}}, true
	case *replicapb.ViewResponse:
		return &replicapb.Response{Msg: &replicapb.Response_View{View: m}}, true
	case *replicapb.RangeHashesResponse:
		return &replicapb.Response{Msg: &replicapb.Response_RangeHashes{RangeHashes: m}}, true
	case *replicapb.PartitionHashesResponse:
		return &replicapb.Response{Msg: &replicapb.Response_PartitionHashes{PartitionHashes: m}}, true
	case *replicapb.FetchPartitionsResponse:
		return &replicapb.Response{Msg: &replicapb.Response_FetchPartitions{FetchPartitions: m}}, true
	case *replicapb.RemovedResponse:
		return &replicapb.Response{Msg: &replicapb.Response_Removed{Removed: m}}, true
	case *replicapb.AnnounceResponse:
		return &replicapb.Response{Msg: &replicapb.Response_Announce{Announce: m}}, true
	case *replicapb.ForwardMutateAck:
		return &replicapb.Response{Msg: &replicapb.Response_ForwardMutate{ForwardMutate: m}}, true
	}
	return nil, false
}

// responseMsg returns the message r carries, or nil when it carries none this switch knows.
func responseMsg(r *replicapb.Response) proto.Message {
	switch m := r.GetMsg().(type) {
	case *replicapb.Response_Mutate:
		return m.Mutate
	case *replicapb.Response_Read:
		return m.Read
	case *replicapb.Response_AccountDelta:
		return m.AccountDelta
	case *replicapb.Response_RangeRead:
		return m.RangeRead
	case *replicapb.Response_CounterUpdate:
		return m.CounterUpdate
	case *replicapb.Response_Batchlog:
		return m.Batchlog
	case *replicapb.Response_TopPartitions:
		return m.TopPartitions
	case *replicapb.Response_ScopeCounts:
		return m.ScopeCounts
	case *replicapb.Response_TopClients:
		return m.TopClients
	case *replicapb.Response_SchemaPrepare:
		return m.SchemaPrepare
	case *replicapb.Response_SchemaAccept:
		return m.SchemaAccept
	case *replicapb.Response_PaxosPrepare:
		return m.PaxosPrepare
	case *replicapb.Response_PaxosPropose:
		return m.PaxosPropose
	case *replicapb.Response_PaxosCommit:
		return m.PaxosCommit
	case *replicapb.Response_Pull:
		return m.Pull
	case *replicapb.Response_Fetch:
		return m.Fetch
	case *replicapb.Response_View:
		return m.View
	case *replicapb.Response_RangeHashes:
		return m.RangeHashes
	case *replicapb.Response_PartitionHashes:
		return m.PartitionHashes
	case *replicapb.Response_FetchPartitions:
		return m.FetchPartitions
	case *replicapb.Response_Removed:
		return m.Removed
	case *replicapb.Response_Announce:
		return m.Announce
	case *replicapb.Response_ForwardMutate:
		return m.ForwardMutate
	}
	return nil
}
