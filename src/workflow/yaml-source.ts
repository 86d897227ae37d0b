// Moved to ../supervisor/yaml-source.ts, the one YAML source-position module of mesh files and
// workflow files. Kept only for the type imports of workflow-checks.ts and workflow-providers.ts;
// delete once they import from ../supervisor/yaml-source.ts.
export type { SourceIssue, YamlPath } from "../supervisor/yaml-source.ts";
