// The etcd server, as go.etcd.io/etcd/v3's main (not served by the module proxy at v3.7) runs it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
