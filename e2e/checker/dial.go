package checker

import (
	"net"
	"time"
)

// dialer fails fast on a dead member, as a well-configured client would.
func dialer() net.Dialer { return net.Dialer{Timeout: time.Second, KeepAlive: 10 * time.Second} }
