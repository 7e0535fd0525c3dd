import CLibFuzzer
import FlowbusFuzzing
import Foundation

// One libFuzzer executable for every decoder: FLOWBUS_FUZZ_TARGET names which (FuzzTarget:
// mdp, chp, envelope, manifest, journal, kvsets, runjson); scripts/fuzz sets it.

/// What libFuzzer calls with each input.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    FuzzTarget.selected.run(data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? [])
    return 0
}

// SwiftPM makes this file the program's main, in place of libFuzzer's, so it starts libFuzzer's
// driver itself. With FLOWBUS_FUZZ_SEEDS=DIR it writes the target's seeds there and stops.
FuzzSeeds.writeIfAsked(for: FuzzTarget.selected)
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { testOneInput($0, $1) })
