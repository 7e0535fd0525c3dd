import Foundation
import Testing
@testable import FlowbusTesting

@Suite("Test scratch folders")
struct TestScratchTests {
    @Test func foldersAreNewEachTimeAndUnderThisProcesssFolder() throws {
        let first = TestScratch.directory("x")
        let second = TestScratch.directory("x")
        #expect(first != second)
        for folder in [first, second] {
            var isDirectory: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) && isDirectory.boolValue)
            #expect(folder.hasPrefix("\(TestScratch.parent)/\(getpid())/x-"), "\(folder)")
        }
        let file = TestScratch.file("f", suffix: ".yaml")
        #expect(file.hasPrefix("\(TestScratch.parent)/\(getpid())/f-") && file.hasSuffix(".yaml"), "\(file)")
        #expect(!FileManager.default.fileExists(atPath: file))
        // An ipc:// endpoint's path has room to spare under 107 bytes.
        #expect(("ipc://" + TestScratch.directory("fbcl") + "/c.snapshot").utf8.count < 80)
    }

    @Test func theFolderOfAnEndedProcessIsRemovedAndALivingOnesIsKept() throws {
        _ = TestScratch.directory("x")
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        let endedFolder = "\(TestScratch.parent)/\(ended.processIdentifier)"
        let livingFolder = "\(TestScratch.parent)/1"  // init: always running
        defer { try? FileManager.default.removeItem(atPath: livingFolder) }
        for folder in [endedFolder, livingFolder] {
            try FileManager.default.createDirectory(atPath: folder + "/run-1/logs", withIntermediateDirectories: true)
        }
        TestScratch.sweepFoldersOfEndedProcesses()
        #expect(!FileManager.default.fileExists(atPath: endedFolder))
        #expect(FileManager.default.fileExists(atPath: livingFolder + "/run-1/logs"))
        #expect(FileManager.default.fileExists(atPath: "\(TestScratch.parent)/\(getpid())"))
    }
}
