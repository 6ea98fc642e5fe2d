// Generated from docs/openapi.yaml by scripts/sync-openapi; do not edit.
enum OpenAPIDocument {
    static let yaml = #"""
openapi: 3.1.0
"""#
}
