import Foundation
import SwitchyardCore

/// The web console's files: plain HTML, CSS and JavaScript from this target's resources (`Assets/`), served by
/// flagsd at `/console/` as they are (no build step).
///
/// `index.html` names every other file as `name?v=__ASSET_VERSION__`; loading replaces the placeholder with
/// ``version``, a hash of every file, so a versioned URL always means the same bytes and browsers may cache it
/// for good, while `index.html` itself is revalidated on every load.
///
/// ```swift
/// let assets = try ConsoleAssets.bundled()
/// let index = assets.files["index.html"]   // content type, bytes, entity tag
/// ```
package struct ConsoleAssets: Sendable {
    /// One file, ready to serve.
    package struct Asset: Sendable {
        /// The `Content-Type` to send.
        package let contentType: String
        package let bytes: [UInt8]
        /// A strong entity tag over the bytes (quoted).
        package let entityTag: String
    }

    /// The files by name (`index.html`, `app.js`, ...), `index.html` with the version filled in.
    package let files: [String: Asset]
    /// A hash of every file: the `v` query parameter of versioned URLs.
    package let version: String

    /// The placeholder in `index.html` that becomes ``version``.
    package static let versionPlaceholder = "__ASSET_VERSION__"

    /// The resource bundle SwiftPM builds for this target, which must sit next to the executable (as `swift build`
    /// leaves it; a deployment copies it beside `flagsd`).
    package static let bundleName = "Switchyard_SwitchyardConsole.resources"

    /// Makes the assets from file contents by name.
    /// - Throws: ``ConsoleAssetsError`` when `index.html` is missing, a name is not a plain file name, or a file
    ///   type has no known content type.
    package init(files contents: [String: [UInt8]]) throws(ConsoleAssetsError) {
        guard contents["index.html"] != nil else { throw ConsoleAssetsError("the console's files have no index.html") }
        var digestInput: [UInt8] = []
        for name in contents.keys.sorted() {
            guard Self.isPlainName(name) else {
                throw ConsoleAssetsError("'\(name)' is not a plain file name ([A-Za-z0-9._-], no leading dot)")
            }
            guard Self.contentType(of: name) != nil else {
                throw ConsoleAssetsError(
                    "'\(name)' has no known content type (the console serves .html, .css, .js, .svg, .png, .ico, .json, .txt)"
                )
            }
            digestInput += Array(name.utf8) + [0] + SHA256.digest(contents[name]!)
        }
        version = String(SHA256.hexDigest(digestInput).prefix(16))
        var files: [String: Asset] = [:]
        for (name, bytes) in contents {
            var bytes = bytes
            if name == "index.html" {
                bytes = Array(
                    String(decoding: bytes, as: UTF8.self).replacingOccurrences(
                        of: Self.versionPlaceholder, with: version
                    ).utf8)
            }
            files[name] = Asset(
                contentType: Self.contentType(of: name)!, bytes: bytes,
                entityTag: "\"\(SHA256.hexDigest(bytes).prefix(24))\"")
        }
        self.files = files
    }

    /// Reads the files of a directory (not its subdirectories or hidden files).
    /// - Throws: ``ConsoleAssetsError`` when the directory cannot be read or its files are not a console.
    package init(directory path: String) throws(ConsoleAssetsError) {
        let directory = URL(fileURLWithPath: path, isDirectory: true)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw ConsoleAssetsError(
                "cannot list the console's files in \(directory.path): \(error.localizedDescription)")
        }
        var contents: [String: [UInt8]] = [:]
        for name in names where !name.hasPrefix(".") {
            let url = directory.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue
            else { continue }
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw ConsoleAssetsError("cannot read \(url.path)")
            }
            contents[name] = Array(data)
        }
        try self.init(files: contents)
    }

    /// The console as built into this package: the `Assets` folder of the target's resource bundle
    /// (``bundledResource(_:)``).
    /// - Throws: ``ConsoleAssetsError`` naming where the bundle was looked for and how to install it.
    package static func bundled() throws(ConsoleAssetsError) -> ConsoleAssets {
        try bundledOnce.get()
    }

    /// The bundle's files read and hashed once per process (they cannot change while it runs): every application
    /// built in one process (tests build hundreds) shares them instead of hashing them again.
    private static let bundledOnce = Result { () throws(ConsoleAssetsError) -> ConsoleAssets in try readBundled() }

    private static func readBundled() throws(ConsoleAssetsError) -> ConsoleAssets {
        try ConsoleAssets(directory: try bundledResource("Assets").path)
    }

    /// A resource of this target's bundle (`Assets`, `openapi.yaml`).
    ///
    /// Looks for the bundle next to the executable first and asks `Bundle.module` only when it is there, because
    /// `Bundle.module` stops the process when it finds no bundle (a flags service must keep serving flags without
    /// the files it serves as they are).
    /// - Throws: ``ConsoleAssetsError`` naming where the bundle was looked for and how to install it.
    static func bundledResource(_ name: String) throws(ConsoleAssetsError) -> URL {
        let beside = Bundle.main.bundleURL.appendingPathComponent(bundleName)
        guard FileManager.default.fileExists(atPath: beside.path) else {
            throw ConsoleAssetsError(
                "\(bundleName) is not installed: it is not in \(Bundle.main.bundleURL.path); copy it from the build folder (.build/release/\(bundleName)) next to flagsd (docs/deploy.md)"
            )
        }
        return Bundle.module.url(forResource: name, withExtension: nil) ?? beside.appendingPathComponent(name)
    }

    /// The `Content-Type` of a file by its extension; nil for types the console does not serve.
    package static func contentType(of name: String) -> String? {
        switch name.split(separator: ".").last.map({ $0.lowercased() }) {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "ico": "image/x-icon"
        case "json": "application/json"
        case "txt": "text/plain; charset=utf-8"
        default: nil
        }
    }

    /// Whether a name is a plain file name a URL may ask for: `[A-Za-z0-9._-]`, not starting with a dot.
    package static func isPlainName(_ name: some StringProtocol) -> Bool {
        guard let first = name.utf8.first, first != UInt8(ascii: "."), name.utf8.count <= 128 else { return false }
        return name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}

/// The OpenAPI document of flagsd's HTTP API, `openapi.yaml` in this target's resources (docs/openapi.yaml links to
/// it), served at `/openapi.yaml`.
package enum OpenAPIDocument {
    /// The document's bytes, read once per process.
    /// - Throws: ``ConsoleAssetsError`` when the resource bundle is not installed or the file cannot be read.
    package static func bundled() throws(ConsoleAssetsError) -> [UInt8] {
        try bundledOnce.get()
    }

    private static let bundledOnce = Result { () throws(ConsoleAssetsError) -> [UInt8] in
        let url = try ConsoleAssets.bundledResource("openapi.yaml")
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ConsoleAssetsError("cannot read \(url.path)")
        }
        return Array(data)
    }
}

/// Why the console's files could not be loaded.
package struct ConsoleAssetsError: Error, Sendable, CustomStringConvertible {
    package let description: String

    init(_ description: String) {
        self.description = description
    }
}
