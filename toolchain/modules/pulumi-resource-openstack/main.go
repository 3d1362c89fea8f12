// pulumi-resource-openstack: terraform-provider-openstack under pulumi-terraform-bridge, with the
// tokens of pulumi-openstack 5.5.3 (tokens.go). The proxy refuses pulumi-openstack's own provider
// module, so this main replaces it (toolchain/pins.toml says why). Property names and shapes are
// the bridge's defaults, which at this pin are pulumi-openstack's (tests/toolchain checks them).
package main

import (
	"os"

	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"
	shimv2 "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfshim/sdk-v2"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/terraform-provider-openstack/terraform-provider-openstack/v3/openstack"
)

// Set at build time (-X main.version=...): the version the Python SDK asks the engine for.
var version string

func providerInfo() tfbridge.ProviderInfo {
	info := tfbridge.ProviderInfo{
		P:       shimv2.NewProvider(openstack.Provider()),
		Name:    "openstack",
		Version: version,
		Config: map[string]*tfbridge.SchemaInfo{
			"region":        {Default: &tfbridge.DefaultInfo{EnvVars: []string{"OS_REGION_NAME"}}},
			"insecure":      {Default: &tfbridge.DefaultInfo{EnvVars: []string{"OS_INSECURE"}}},
			"endpoint_type": {Default: &tfbridge.DefaultInfo{EnvVars: []string{"OS_ENDPOINT_TYPE"}}},
			"swauth":        {Default: &tfbridge.DefaultInfo{EnvVars: []string{"OS_SWAUTH"}}},
			"cloud":         {Default: &tfbridge.DefaultInfo{EnvVars: []string{"OS_CLOUD"}}},
			"delayed_auth":  {Default: &tfbridge.DefaultInfo{EnvVars: []string{"OS_DELAYED_AUTH"}}},
			"allow_reauth":  {Default: &tfbridge.DefaultInfo{EnvVars: []string{"OS_ALLOW_REAUTH"}}},
		},
		Resources:   map[string]*tfbridge.ResourceInfo{},
		DataSources: map[string]*tfbridge.DataSourceInfo{},
	}
	for tfName, token := range resourceTokens {
		info.Resources[tfName] = &tfbridge.ResourceInfo{Tok: tokens.Type(token)}
	}
	// As pulumi-openstack: a floating IP's pool from the environment when not given.
	info.Resources["openstack_networking_floatingip_v2"].Fields = map[string]*tfbridge.SchemaInfo{
		"pool": {Default: &tfbridge.DefaultInfo{EnvVars: []string{"OS_POOL_NAME"}}},
	}
	for tfName, token := range functionTokens {
		info.DataSources[tfName] = &tfbridge.DataSourceInfo{Tok: tokens.ModuleMember(token)}
	}
	// As pulumi-openstack: a required `name` becomes optional, made from the resource's name and a random suffix.
	info.SetAutonaming(255, "-")
	return info
}

func main() {
	if version == "" {
		panic("built without -X main.version")
	}
	info := providerInfo()
	if len(os.Args) > 1 && os.Args[1] == "--ocp-mapping" { // for tests/toolchain: what this plugin serves
		dumpMapping(info)
		return
	}
	// The schema only answers `pulumi package get-schema`; a program's runs never ask for it.
	tfbridge.Main("openstack", version, info, []byte(`{"name":"openstack","version":"`+version+`"}`))
}
