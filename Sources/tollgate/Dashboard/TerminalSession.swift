import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Puts the terminal in the state a full-screen view needs — alternate screen, hidden cursor, keys
/// read one at a time without echo — and puts it back exactly as it was on ``restore()``.
final class TerminalSession {
    private var original = termios()
    private var active = false

    /// Whether standard output is a terminal.
    static var isInteractive: Bool { isatty(STDOUT_FILENO) == 1 && isatty(STDIN_FILENO) == 1 }

    /// The terminal's size, at least 80×24.
    static var size: (width: Int, height: Int) {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return (80, 24) }
        return (max(80, Int(size.ws_col)), max(24, Int(size.ws_row)))
    }

    func enter() {
        guard tcgetattr(STDIN_FILENO, &original) == 0 else { return }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        write("\u{1B}[?1049h\u{1B}[?25l")
        active = true
    }

    func restore() {
        guard active else { return }
        active = false
        write("\u{1B}[?25h\u{1B}[?1049l")
        tcsetattr(STDIN_FILENO, TCSANOW, &original)
    }

    /// Replaces the screen's content with `lines`.
    func draw(_ lines: [String]) {
        write("\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\r\n"))
    }

    /// What waiting for a key gave.
    enum KeyRead: Equatable, Sendable {
        /// A key was pressed.
        case key(UInt8)
        /// None within the timeout.
        case none
        /// The terminal is gone (hung up, closed): nothing more will come.
        case closed
    }

    /// Waits up to `timeout` for a key.
    ///
    /// The wait never blocks longer than `timeout`: a deadline already past polls without waiting
    /// (a negative timeout would make `poll` wait forever, freezing the view until a key came).
    /// It blocks its thread: from async code, call ``waitForKey(timeout:)``.
    static func readKey(timeout: TimeInterval) -> KeyRead {
        var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(max(0, min(timeout, 60)) * 1000)
        let ready = poll(&descriptor, 1, milliseconds)
        if ready < 0 { return errno == EINTR ? .none : .closed }
        guard ready > 0 else { return .none }
        var byte: UInt8 = 0
        switch read(STDIN_FILENO, &byte, 1) {
        case 1: return .key(byte)
        case -1 where errno == EINTR || errno == EAGAIN: return .none
        default: return .closed
        }
    }

    /// ``readKey(timeout:)`` on a dispatch thread, so the wait never holds one of Swift
    /// concurrency's few threads (the task that listens for circuit changes needs one).
    static func waitForKey(timeout: TimeInterval) async -> KeyRead {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: readKey(timeout: timeout)) }
        }
    }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
