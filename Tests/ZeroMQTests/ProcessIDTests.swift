import CProcessID
import Foundation
import Testing
@testable import ZeroMQ

/// Every executable that links ZeroMQ keeps its process id in memory (Sources/CProcessID): libzmq
/// asks `getpid` on every look at a command mailbox, a system call since glibc 2.25.
@Suite struct ProcessIDTests {
    @Test func getpidResolvesToTheKeptOneForEveryLibrary() throws {
        // What libzmq's calls resolve to is what the dynamic linker finds first for the name.
        let resolved = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "getpid"))
        #expect(UnsafeRawPointer(resolved) == cprocessid_getpid_address(),
                "getpid resolves to glibc's, not the executable's: the CProcessID object was not linked, or its getpid was not exported")
        #expect(getpid() == cprocessid_kernel_pid())
    }

    @Test func libzmqsForkChecksCallTheKeptGetpid() throws {
        let context = try ZMQContext()
        let endpoint = ipcEndpoint()
        let pull = try ZMQSocket(context: context, type: .pull)
        try pull.bind(endpoint)
        try pull.setReceiveTimeout(.seconds(5))
        let push = try ZMQSocket(context: context, type: .push)
        try push.connect(endpoint)
        cprocessid_count_calls(true)
        for index in 0..<20 {
            _ = try push.send([Array("message \(index)".utf8)])
            #expect(try pull.receiveMessage() == [Array("message \(index)".utf8)])
        }
        cprocessid_count_calls(false)
        // Each message wakes the receiving socket's mailbox (and the I/O thread's), whose looks
        // ask getpid: with glibc's own, none would be counted here.
        #expect(cprocessid_calls() >= 20)
    }

    @Test func aForkedChildSeesItsOwnID() {
        let parent = getpid()
        #expect(cprocessid_child_sees_own_pid() == 1)
        #expect(getpid() == parent)
        #expect(getpid() == cprocessid_kernel_pid())
    }
}
