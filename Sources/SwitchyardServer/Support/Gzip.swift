import CZlib

/// gzip (RFC 1952) through the system zlib.
///
/// Snapshots are compressed once per version and shared by every request, so the simplicity of a one-shot
/// call matters more than speed here; Foundation has no gzip, and a system library target costs no build time.
package enum Gzip {
    /// Compresses bytes into a gzip member.
    package static func compress(_ input: [UInt8], level: Int32 = 6) -> [UInt8] {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
        let status = deflateInit2_(
            &stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
            Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "zlib deflateInit2 failed with \(status)")
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 32)
        var input = input
        let result = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        precondition(
            result == Z_STREAM_END, "zlib deflate did not finish (\(result)) although the output had deflateBound bytes"
        )
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// Decompresses a gzip member (for tests and tools).
    ///
    /// - Throws: `GzipError` when the input is not a complete gzip member.
    package static func decompress(_ input: [UInt8]) throws(GzipError) -> [UInt8] {
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw GzipError(message: "zlib inflateInit2 failed")
        }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = input
        var status: Int32 = Z_OK
        input.withUnsafeMutableBufferPointer { inBuffer in
            stream.next_in = inBuffer.baseAddress
            stream.avail_in = uInt(inBuffer.count)
            repeat {
                let produced = chunk.withUnsafeMutableBufferPointer { outBuffer in
                    stream.next_out = outBuffer.baseAddress
                    stream.avail_out = uInt(outBuffer.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return outBuffer.count - Int(stream.avail_out)
                }
                output.append(contentsOf: chunk[..<produced])
            } while status == Z_OK
        }
        guard status == Z_STREAM_END else {
            throw GzipError(message: "not a complete gzip stream (zlib status \(status))")
        }
        return output
    }
}

package struct GzipError: Error, CustomStringConvertible {
    package let message: String
    package var description: String { message }
}
