#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A small file mapped into both the test process and its child: the child writes where it is (which
/// combination, which point or flow) and its counters with plain stores, so when it traps, what it was doing is
/// still there for the parent to read.
///
/// Layout, in 64-bit slots: a header (``Slot``), then a failure counter per kind, then a served-plugins mask per
/// point.
final class SharedState {
    enum Slot {
        static let magic = 0
        /// The position being checked: a combination number, or a candidate's position while shrinking.
        static let position = 1
        /// 0 between checks, 1 routing a point, 2 running a flow.
        static let phase = 2
        /// The point or flow.
        static let phaseIndex = 3
        /// The input the point routes.
        static let input = 4
        /// Positions finished.
        static let done = 5
        /// The point's switches the routing sees on (bits in code order).
        static let local = 6
        /// 1 once the child ran all its work.
        static let finished = 7
        /// Combinations whose flows were skipped because a point traps there.
        static let flowsSkipped = 8
        /// 1 once the child found its work and began.
        static let started = 9
        static let headerSize = 16
    }

    static let magicValue: UInt64 = 0x5357_4D41_5452_4958  // "SWMATRIX"

    let pointer: UnsafeMutablePointer<UInt64>
    let slotCount: Int
    let kindCount: Int
    let pointCount: Int

    /// Maps the file, creating and zeroing it when asked.
    init?(path: String, kindCount: Int, pointCount: Int, create: Bool) {
        slotCount = Slot.headerSize + kindCount + pointCount
        self.kindCount = kindCount
        self.pointCount = pointCount
        let size = slotCount * 8
        let descriptor = create ? open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600) : open(path, O_RDWR)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        if create, ftruncate(descriptor, off_t(size)) != 0 { return nil }
        guard let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), mapped != MAP_FAILED
        else {
            return nil
        }
        pointer = mapped.bindMemory(to: UInt64.self, capacity: slotCount)
        if create {
            pointer.initialize(repeating: 0, count: slotCount)
            pointer[Slot.magic] = Self.magicValue
        }
    }

    deinit {
        if findingsDescriptor >= 0 { close(findingsDescriptor) }
        munmap(UnsafeMutableRawPointer(pointer), slotCount * 8)
    }

    subscript(slot: Int) -> UInt64 {
        get { pointer[slot] }
        set { pointer[slot] = newValue }
    }

    func counter(_ kind: KindID) -> UInt64 {
        kind < kindCount ? pointer[Slot.headerSize + kind] : 0
    }

    func addToCounter(_ kind: KindID, _ amount: UInt64 = 1) {
        if kind < kindCount { pointer[Slot.headerSize + kind] += amount }
    }

    /// The findings file, open for appending (child side); -1 when there is none.
    var findingsDescriptor: Int32 = -1

    /// Appends a line to the findings file with one `write` (`O_APPEND`), so what was written before a trap is
    /// complete.
    func appendLine(_ line: String) {
        guard findingsDescriptor >= 0 else { return }
        let bytes = Array(line.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                write(findingsDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written <= 0 { return }
            offset += written
        }
    }

    func served(_ point: Int) -> UInt64 {
        pointer[Slot.headerSize + kindCount + point]
    }

    func markServed(_ point: Int, _ bits: UInt64) {
        pointer[Slot.headerSize + kindCount + point] |= bits
    }
}
