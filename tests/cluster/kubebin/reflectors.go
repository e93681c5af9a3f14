package main

// reflectors is the fleet benchmark's anchor: N client-go informers, each with its own node
// identity (a client certificate), watching the pods of its node by the field selector
// spec.nodeName=NAME, exactly as the kubelet's pod source does.
func reflectors(args []string) int { return 0 }
