import FlowProtocol
import Testing

@Suite("MDP service names")
struct ServiceNameTests {
    @Test(arguments: ["flowbus.echo", "mmi.service", "vm.signin", "coord.auth", "a", String(repeating: "z", count: 64), "x_y-z.9"])
    func acceptsValidNames(text: String) throws {
        #expect(try ServiceName(text).text == text)
    }

    @Test(arguments: ["", "VM.signin", "vm signin", "vm/signin", "vmé", String(repeating: "z", count: 65)])
    func rejectsInvalidNames(text: String) {
        #expect(throws: NameError.self) { try ServiceName(text) }
    }

    @Test func conventions() throws {
        let signin = try ScreenName("signin")
        #expect(ServiceName.viewModel(signin).text == "vm.signin")
        #expect(ServiceName.viewModel(signin).role == .viewModel(signin))
        #expect(try ServiceName.coordinator("auth").text == "coord.auth")
        #expect(try ServiceName.coordinator("auth").role == .coordinator("auth"))
        #expect(ServiceName.mmiService.role == .management)
        #expect(try ServiceName("mmi.other").role == .management)
        #expect(ServiceName.echo.role == .flowbus)
        #expect(try ServiceName("billing").role == .other)
        #expect(throws: NameError.self) { try ServiceName.coordinator("Auth") }
    }

    @Test func theLongestScreenNameStillMakesAServiceName() throws {
        let screen = try ScreenName(String(repeating: "s", count: ScreenName.maximumBytes))
        #expect(try ServiceName(ServiceName.viewModel(screen).text).text.utf8.count == ServiceName.maximumBytes)
        #expect(throws: NameError.self) { try ScreenName(String(repeating: "s", count: ScreenName.maximumBytes + 1)) }
    }
}
