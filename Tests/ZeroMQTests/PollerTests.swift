import Testing
@testable import ZeroMQ

@Suite struct PollerTests {
    let context = try! ZMQContext()

    @Test func pollReportsOnlyTheReadableSocket() throws {
        let a = ipcEndpoint("a"), b = ipcEndpoint("b")
        let quiet = try ZMQSocket(context: context, type: .pull)
        try quiet.bind(a)
        let busy = try ZMQSocket(context: context, type: .pull)
        try busy.bind(b)
        let push = try ZMQSocket(context: context, type: .push)
        try push.connect(b)

        let poller = ZMQPoller()
        let quietIndex = poller.add(quiet)
        let busyIndex = poller.add(busy)
        #expect(try poller.poll(timeout: .milliseconds(10)) == 0)

        try push.send([Array("x".utf8)])
        #expect(try poller.poll(timeout: .seconds(5)) == 1)
        #expect(poller.isReadable(busyIndex))
        #expect(!poller.isReadable(quietIndex))
        #expect(try busy.hasIncoming())
    }

    @Test func pollWatchesAPlainFileDescriptor() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let poller = ZMQPoller()
        let index = poller.add(fileDescriptor: fds[0])
        #expect(try poller.poll(timeout: .zero) == 0)
        var byte: UInt8 = 1
        #expect(write(fds[1], &byte, 1) == 1)
        #expect(try poller.poll(timeout: .seconds(5)) == 1)
        #expect(poller.isReadable(index))
    }
}

#if canImport(Glibc)
import Glibc
#endif
