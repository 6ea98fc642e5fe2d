// The core types an app needs next to the client, re-exported so that apps import `SwitchyardClient` (or
// `SwitchyardPlugins`) alone.
//
// `SwitchyardCore` has its own `PluginSwitch` and `PluginPoint` (the definitions in a flag set). Swift resolves a
// type name found in two imported modules as ambiguous, so a file that imports `SwitchyardCore` as a whole as
// well must write `SwitchyardClient.PluginSwitch` and `SwitchyardPlugins.PluginPoint` (or import single core
// types: `import struct SwitchyardCore.FlagSet`).
@_exported public import struct SwitchyardCore.EvaluationContext
@_exported public import struct SwitchyardCore.EvaluationDetails
@_exported public import enum SwitchyardCore.EvaluationErrorCode
@_exported public import enum SwitchyardCore.EvaluationReason
@_exported public import enum SwitchyardCore.FlagValue
@_exported public import enum SwitchyardCore.FlagValueType
@_exported public import struct SwitchyardCore.JSONNumber
@_exported public import struct SwitchyardCore.JSONObject
@_exported public import enum SwitchyardCore.JSONValue
