//go:build tools

// Names the binary this module builds, so `go mod tidy` keeps its dependencies.
package tools

import _ "k8s.io/cloud-provider-openstack/cmd/openstack-cloud-controller-manager"
