import Foundation
import FlowbusFuzzing
import Testing

/// The fuzz targets in the ordinary build: every seed, and every input a fuzzer once stopped on
/// (`Fuzz/regressions/<target>/`), runs through the same decoder and property as under
/// libFuzzer. A property that breaks stops the test process, which fails the run.
@Suite("Fuzz targets replayed")
struct FuzzReplayTests {
    static let root = FuzzSeeds.projectRoot

    static func regressions(_ target: FuzzTarget) -> [(name: String, bytes: [UInt8])] {
        let folder = root.appendingPathComponent("Fuzz/regressions/\(target.rawValue)")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().compactMap { name in
            FileManager.default.contents(atPath: folder.appendingPathComponent(name).path).map { (name, Array($0)) }
        }
    }

    @Test("every seed passes its target", arguments: FuzzTarget.allCases)
    func seeds(_ target: FuzzTarget) {
        let seeds = FuzzSeeds.seeds(for: target, root: Self.root)
        // The vectors and the built-in manifests are there even with every app removed.
        #expect(seeds.count >= 2, "no seeds found for \(target) under \(Self.root.path)")
        let accepted = seeds.filter { target.run($0) }.count
        // The golden vectors are valid messages: a decoder refusing them all is broken.
        #expect(accepted >= seeds.count / 4 && accepted >= 1, "\(target): \(accepted) of \(seeds.count) seeds accepted")
    }

    @Test("every input a fuzzer once stopped on passes now", arguments: FuzzTarget.allCases)
    func regressions(_ target: FuzzTarget) {
        for input in Self.regressions(target) { target.run(input.bytes) }
    }

    @Test("the frame format reads back what it wrote, and reads any bytes")
    func frames() {
        let frames: [[UInt8]] = [[], [1, 2, 3], Array(repeating: 9, count: 300), []]
        #expect(FuzzFrames.split(FuzzFrames.join(frames)) == frames)
        #expect(FuzzFrames.split([0, 5, 1, 2]) == [[1, 2]])
        #expect(FuzzFrames.split([7]) == [[7]])
        #expect(FuzzFrames.split([]) == [])
    }
}
