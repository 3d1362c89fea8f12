package main

// The mapping this plugin serves, as JSON, for the contract tests: every token, the Terraform
// name behind it, and each input and output property as the engine sees it (the bridge's
// name, type, whether required, whether secret, and a one-item list flattened to its item).

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfbridge"
	shim "github.com/pulumi/pulumi-terraform-bridge/v3/pkg/tfshim"
)

type property struct {
	Name      string               `json:"name"`
	Type      string               `json:"type"`
	Required  bool                 `json:"required"`
	Optional  bool                 `json:"optional"`
	Computed  bool                 `json:"computed"`
	Secret    bool                 `json:"secret"`
	Flattened bool                 `json:"flattened,omitempty"`
	Element   string               `json:"element,omitempty"`
	Fields    map[string]*property `json:"fields,omitempty"`
}

type entry struct {
	Terraform  string               `json:"terraform"`
	Properties map[string]*property `json:"properties"`
}

func describe(schemas shim.SchemaMap, fields map[string]*tfbridge.SchemaInfo) map[string]*property {
	found := map[string]*property{}
	schemas.Range(func(key string, s shim.Schema) bool {
		p := &property{
			Name: tfbridge.TerraformToPulumiNameV2(key, schemas, nil), Type: s.Type().String(),
			Required: s.Required(), Optional: s.Optional(), Computed: s.Computed(), Secret: s.Sensitive(),
		}
		if info, ok := fields[key]; ok && info.Default != nil { // auto-named, or from the environment
			p.Required, p.Optional = false, true
		}
		switch elem := s.Elem().(type) {
		case shim.Resource:
			p.Fields = describe(elem.Schema(), nil)
			p.Flattened = s.MaxItems() == 1
		case shim.Schema:
			p.Element = elem.Type().String()
			p.Flattened = s.MaxItems() == 1
		}
		found[key] = p
		return true
	})
	return found
}

func dumpMapping(info tfbridge.ProviderInfo) {
	out := map[string]map[string]entry{"resources": {}, "functions": {}}
	resources, functions := info.P.ResourcesMap(), info.P.DataSourcesMap()
	for name, r := range info.Resources {
		out["resources"][string(r.Tok)] = entry{name, describe(resources.Get(name).Schema(), r.Fields)}
	}
	for name, d := range info.DataSources {
		out["functions"][string(d.Tok)] = entry{name, describe(functions.Get(name).Schema(), d.Fields)}
	}
	var unmapped []string
	resources.Range(func(key string, _ shim.Resource) bool {
		if _, ok := info.Resources[key]; !ok {
			unmapped = append(unmapped, key)
		}
		return true
	})
	functions.Range(func(key string, _ shim.Resource) bool {
		if _, ok := info.DataSources[key]; !ok {
			unmapped = append(unmapped, "data."+key)
		}
		return true
	})
	sort.Strings(unmapped)
	out["unmapped"] = map[string]entry{}
	for _, name := range unmapped {
		out["unmapped"][name] = entry{Terraform: name}
	}
	encoded, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(append(encoded, '\n'))
}
