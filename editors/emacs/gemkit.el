;;; gemkit.el --- Gemini CLI IDE companion through gemkit  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, convenience

;;; Commentary:

;; Makes Emacs a Gemini CLI "IDE mode" companion.  `gemkit-mode' starts
;; `gemkit ide serve --editor stdio' and speaks its editor protocol
;; (newline-delimited JSON-RPC on the child's stdin and stdout, see
;; docs/editor-protocol.md): it reports the file you are in, the cursor and
;; the region; exports the variables that lead a `gemini' started in an
;; Emacs terminal to this Emacs; and shows the changes Gemini CLI proposes
;; as a pair of buffers (the file on disk, read-only, and the proposal,
;; editable), their differing lines highlighted as in `diff-mode', that
;; you accept with C-c C-c or reject with C-c C-k.
;; It serves Claude Code too: a `claude' started in an Emacs terminal
;; connects by itself, `gemkit-mention' puts @file#L1-2 in its prompt, and
;; Flymake's diagnostics reach its model after each edit.  And Qwen Code:
;; a `qwen' started in the workspace finds this Emacs through the lock
;; file gemkit writes for it (~/.qwen/ide), once its IDE mode is on.
;;
;;   (add-to-list 'load-path "/path/to/gemkit/editors/emacs")
;;   (require 'gemkit)
;;   (gemkit-mode 1)
;;
;; See docs/editors.md for the whole story.

;;; Code:

(require 'cl-lib)
(require 'subr-x)

(autoload 'gemkit-lsp-handle "gemkit-lsp")
(autoload 'gemkit-lsp-settled-diagnostics "gemkit-lsp")
(autoload 'gemkit--highlight "gemkit-diff")
(autoload 'gemkit--schedule-highlight "gemkit-diff")
(autoload 'gemkit-next-change "gemkit-diff" nil t)
(autoload 'gemkit-previous-change "gemkit-diff" nil t)

(defgroup gemkit nil
  "Gemini CLI IDE companion through gemkit."
  :group 'tools
  :prefix "gemkit-")

(defcustom gemkit-program "gemkit"
  "The gemkit binary: a name found on variable `exec-path' or a full path."
  :type 'string)

(defcustom gemkit-args nil
  "Extra arguments for `gemkit ide serve', e.g. (\"-v\") for debug logs."
  :type '(repeat string))

(defcustom gemkit-workspace nil
  "Workspace folders; nil means `default-directory' when gemkit starts."
  :type '(repeat directory))

(defcustom gemkit-ide-name "emacs"
  "Short lowercase editor name written to the discovery file."
  :type 'string)

(defcustom gemkit-ide-display-name "Emacs"
  "Editor name Gemini CLI shows."
  :type 'string)

(defcustom gemkit-poll-interval 1.0
  "Seconds between checks that reported files still exist; nil disables."
  :type '(choice number (const nil)))

(defcustom gemkit-max-selection 32768
  "Longest region, in characters, sent to gemkit (it cuts at 16384)."
  :type 'integer)

(defvar gemkit-ready-hook nil
  "Run when gemkit serves and its discovery file exists.")

(defvar gemkit-stopped-hook nil
  "Run when the gemkit process has ended.")

(defvar gemkit--process nil "The gemkit process.")
(defvar gemkit--ready nil "The params of server/ready, an alist.")
(defvar gemkit--stopping nil "Non-nil while `gemkit-stop' ends gemkit.")
(defvar gemkit--partial nil "Chunks of an unfinished line, newest first.")
(defvar gemkit--tracked (make-hash-table :test 'eq)
  "Buffer -> the path reported to gemkit for it.")
(defvar gemkit--last nil "What the last focus or selection reported.")
(defvar gemkit--last-buffer nil "The buffer of the last focus or selection.")
(defvar gemkit--diffs (make-hash-table :test 'equal) "File path -> diff view.")
(defvar gemkit--timer nil "The timer that checks for deleted files.")
(defvar gemkit--log-buffer " *gemkit-log*" "Where gemkit's stderr goes.")

(defvar-local gemkit--diff-path nil "The file whose diff this buffer shows.")
(defvar-local gemkit--diff-agent nil
  "The agent that proposed this buffer's change (Claude Code, …), or nil.")

(defcustom gemkit-diff-refresh-delay 0.3
  "Seconds after the last edit of a proposal before its changes are marked again."
  :type 'number)

(defcustom gemkit-diff-refine 20
  "Mark the changed words of at most this many changed hunks; 0 marks none.
Hunks of more than 8000 characters a side are not refined: the cost
of smerge's refinement grows with the square of their changes."
  :type 'integer)

(cl-defstruct (gemkit--diff (:constructor gemkit--make-diff))
  path left right config done timer)

;;; Protocol output

(defun gemkit--live-p ()
  "Return non-nil when the gemkit process is alive."
  (and gemkit--process (process-live-p gemkit--process)))

(defun gemkit--write (msg)
  "Send MSG, an alist, to gemkit as one JSON line."
  (when (and (gemkit--live-p) (not gemkit--stopping))
    (process-send-string gemkit--process (concat (json-serialize msg) "\n"))
    t))

(defun gemkit--send (method params)
  "Send the notification METHOD with PARAMS, an alist."
  (gemkit--write `((jsonrpc . "2.0") (method . ,method) (params . ,params))))

(defun gemkit--reply (id result)
  "Answer gemkit's request ID with RESULT."
  (gemkit--write `((jsonrpc . "2.0") (id . ,id) (result . ,result))))

(defun gemkit--reply-error (id code message)
  "Answer gemkit's request ID with the error CODE and MESSAGE."
  (gemkit--write `((jsonrpc . "2.0") (id . ,id)
                   (error . ((code . ,code) (message . ,message))))))

;;; Positions and paths

(defun gemkit--utf16-length (s)
  "Length of S in UTF-16 code units, as the VS Code companion counts."
  (+ (length s) (cl-count-if (lambda (c) (> c #xFFFF)) s)))

(defun gemkit--file-of (buffer)
  "The absolute file name BUFFER visits, or nil."
  (let ((f (buffer-file-name buffer)))
    (and f (expand-file-name f))))

(defun gemkit--cursor ()
  "The 1-based line and UTF-16 character of point, as an alist."
  `((line . ,(line-number-at-pos nil t))
    (character . ,(1+ (gemkit--utf16-length
                       (buffer-substring-no-properties (line-beginning-position) (point)))))))

(defun gemkit--region-text ()
  "The active region's text (at most `gemkit-max-selection' characters), or nil."
  (when (and (region-active-p) (/= (region-beginning) (region-end)))
    (let ((beg (region-beginning)))
      (buffer-substring-no-properties
       beg (min (region-end) (+ beg gemkit-max-selection))))))

;;; Editor events

(defun gemkit--forget (buffer method)
  "Stop tracking BUFFER and report its file with METHOD."
  (let ((path (gethash buffer gemkit--tracked)))
    (when path
      (remhash buffer gemkit--tracked)
      (setq gemkit--last nil)
      (unless (cl-loop for p being the hash-values of gemkit--tracked thereis (equal p path))
        (gemkit--send method `((path . ,path)))))))

(defun gemkit--check-rename (buffer)
  "Report a tracked BUFFER that now visits another file (C-x C-w, Dired)."
  (let ((old (gethash buffer gemkit--tracked))
        (new (gemkit--file-of buffer)))
    (cond ((or (null old) (equal old new)))
          ((null new) (gemkit--forget buffer "editor/close"))
          (t (puthash buffer new gemkit--tracked)
             (setq gemkit--last nil)
             (gemkit--send "editor/rename" `((oldPath . ,old) (newPath . ,new)))))))

(defun gemkit--update (&rest _)
  "Report the selected window's file, cursor and region if they changed."
  (when (and gemkit--ready (not (minibufferp (window-buffer (selected-window)))))
    (let ((buffer (window-buffer (selected-window))))
      (with-current-buffer buffer
        (gemkit--check-rename buffer)
        (let ((path (gemkit--file-of buffer)))
          (when (and path (or (gethash buffer gemkit--tracked) (file-regular-p path)))
            (let* ((cursor (gemkit--cursor))
                   (text (gemkit--region-text))
                   (key (list path cursor text))
                   (focus (not (eq buffer gemkit--last-buffer))))
              (unless (and (equal key gemkit--last) (not focus))
                (setq gemkit--last key
                      gemkit--last-buffer buffer)
                (puthash buffer path gemkit--tracked)
                (gemkit--send (if focus "editor/focus" "editor/selection")
                              `((path . ,path) (cursor . ,cursor)
                                ,@(and text `((selectedText . ,text)))))))))))))

(defun gemkit--on-kill-buffer ()
  "Report the killed buffer's file as closed, or deleted when it is gone."
  (when (gethash (current-buffer) gemkit--tracked)
    (when (eq gemkit--last-buffer (current-buffer))
      (setq gemkit--last-buffer nil))
    (gemkit--forget (current-buffer)
                    (if (file-exists-p (gethash (current-buffer) gemkit--tracked))
                        "editor/close" "editor/delete"))))

(defun gemkit--poll ()
  "Report tracked files that were renamed, closed or deleted."
  (condition-case err
      (maphash (lambda (buffer path)
                 (cond ((not (buffer-live-p buffer)) (gemkit--forget buffer "editor/close"))
                       ((not (file-exists-p path)) (gemkit--forget buffer "editor/delete"))
                       (t (gemkit--check-rename buffer))))
               (copy-hash-table gemkit--tracked))
    (error (gemkit--log "poll: %s" (error-message-string err)))))

(defun gemkit--log (fmt &rest args)
  "Add a line made with FMT and ARGS to gemkit's log buffer."
  (with-current-buffer (get-buffer-create gemkit--log-buffer)
    (goto-char (point-max))
    (insert (apply #'format fmt args) "\n")))

(defun gemkit--revert (path)
  "Show the new text of PATH in its buffer, if it has no unsaved edits."
  (let ((buffer (find-buffer-visiting path)))
    (when (and buffer (not (buffer-modified-p buffer)))
      (with-current-buffer buffer
        (revert-buffer t t t)))))

;;; Diff views

(defvar gemkit-diff-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'gemkit-accept)
    (define-key map (kbd "C-c C-k") #'gemkit-reject)
    (define-key map (kbd "C-c C-d") #'gemkit-show-changes)
    (define-key map (kbd "C-c C-n") #'gemkit-next-change)
    (define-key map (kbd "C-c C-p") #'gemkit-previous-change)
    map)
  "Keys of a proposal buffer.")

(define-minor-mode gemkit-diff-mode
  "A change an agent proposes: edit it, then accept or reject it.
The header line names the agent (`gemkit--diff-agent') when gemkit
said which one proposed it.  The lines that differ from the file on
disk have the face `diff-added' here and `diff-removed' in the buffer
of the file, their changed words `diff-refine-added' and
`diff-refine-removed'; they are marked again as you edit the proposal.
In either buffer, \\[gemkit-next-change] goes to the next change and
\\[gemkit-previous-change] to the previous one, the other window to its other side.
\\{gemkit-diff-mode-map}"
  :lighter " gemkit-diff"
  (when gemkit-diff-mode
    (setq header-line-format
          (concat
           (if (and (stringp gemkit--diff-agent) (not (string-empty-p gemkit--diff-agent)))
               ;; %-constructs of the header line are the mode's, not the agent's.
               (format "Proposed by %s: " (string-replace "%" "%%" gemkit--diff-agent))
             "Proposed change: ")
           (substitute-command-keys
            "\\[gemkit-accept] accept, \\[gemkit-reject] reject, \\[gemkit-show-changes] show the changes")))))

(defun gemkit--set-mode (path)
  "Give the current buffer the major mode of PATH, without its hooks."
  (let ((buffer-file-name path))
    (ignore-errors (delay-mode-hooks (set-auto-mode t))))
  (when (and global-font-lock-mode font-lock-defaults)
    (font-lock-mode 1)))

(defun gemkit--own-local-map ()
  "Give the current buffer a local keymap of its own.
It inherits the major mode's map, if that has one.  A buffer in
`fundamental-mode' (a file whose mode Emacs does not know) has no
local map, and Emacs 28's term.el then fails in `menu-bar-update-hook'
while such a buffer is selected beside an `M-x term' buffer (it adds
its Terminal menu to the current local map): \"(wrong-type-argument
keymapp nil)\" in *Messages*.  A map of the buffer's own also keeps
that menu out of the major mode's map."
  (use-local-map (make-composed-keymap nil (current-local-map))))

(defun gemkit--open-diff (path content &optional agent)
  "Show CONTENT, proposed for PATH by AGENT, beside the file on disk."
  (let ((old (gethash path gemkit--diffs)))
    (when old (gemkit--close-view old)))   ; a new proposal replaces the old view
  (let* ((on-disk (file-regular-p path))
         (name (file-name-nondirectory path))
         (left (generate-new-buffer (format "*gemkit %s [%s]*" name (if on-disk "on disk" "new file"))))
         (right (generate-new-buffer (format "*gemkit %s [proposed]*" name)))
         (d (gemkit--make-diff :path path :left left :right right
                               :config (current-window-configuration))))
    (with-current-buffer left
      (when on-disk
        (insert-file-contents path))
      (gemkit--set-mode path)
      (gemkit--own-local-map)
      (local-set-key (kbd "C-c C-n") #'gemkit-next-change)
      (local-set-key (kbd "C-c C-p") #'gemkit-previous-change)
      ;; A header line as the proposal's keeps their lines side by side.
      (setq header-line-format
            (concat (if on-disk "The file on disk: " "A new file: ")
                    (substitute-command-keys
                     "\\[gemkit-next-change] next change, \\[gemkit-previous-change] previous")))
      (setq gemkit--diff-path path)
      (set-buffer-modified-p nil)
      (setq buffer-read-only t))
    (with-current-buffer right
      (insert content)
      (goto-char (point-min))
      (gemkit--set-mode path)
      (gemkit--own-local-map)
      (setq gemkit--diff-path path
            gemkit--diff-agent agent)
      (gemkit-diff-mode 1)
      (set-buffer-modified-p nil)
      ;; Killing the proposal (C-x k) rejects it.
      (add-hook 'kill-buffer-hook (lambda () (gemkit--proposal-killed d)) nil t)
      ;; Edits (undo too) mark the changes again, once typing pauses.
      (add-hook 'after-change-functions (lambda (&rest _) (gemkit--schedule-highlight d)) nil t))
    (gemkit--highlight d)
    (puthash path d gemkit--diffs)
    ;; Lay the pair out in the window you work in (not the minibuffer, if
    ;; you are answering a prompt), the rest of the frame put aside.
    (when (window-minibuffer-p)
      (select-window (or (minibuffer-selected-window) (frame-first-window))))
    (ignore-errors (delete-other-windows))
    (set-window-dedicated-p nil nil)
    (switch-to-buffer left nil t)
    (let ((window (split-window-right)))
      (set-window-buffer window right)
      (select-window window))
    d))

(defun gemkit--proposal-killed (d)
  "Reject D, whose proposal buffer is being killed, unless it is answered."
  (unless (gemkit--diff-done d)
    (run-at-time 0 nil #'gemkit--resolve d nil)))

(defun gemkit--close-view (d)
  "Remove the buffers of D, restoring the window layout it replaced."
  (setf (gemkit--diff-done d) t)
  (when (timerp (gemkit--diff-timer d))
    (cancel-timer (gemkit--diff-timer d)))
  (when (eq (gethash (gemkit--diff-path d) gemkit--diffs) d)
    (remhash (gemkit--diff-path d) gemkit--diffs))
  (let ((shown (cl-some (lambda (b) (and (buffer-live-p b) (get-buffer-window b)))
                        (list (gemkit--diff-left d) (gemkit--diff-right d)))))
    (dolist (b (list (gemkit--diff-left d) (gemkit--diff-right d)))
      (when (buffer-live-p b)
        (with-current-buffer b (set-buffer-modified-p nil))
        (kill-buffer b)))
    (when (and shown (window-configuration-p (gemkit--diff-config d)))
      (ignore-errors (set-window-configuration (gemkit--diff-config d))))))

(defun gemkit--proposal-text (d)
  "The whole text of D's proposal buffer."
  (with-current-buffer (gemkit--diff-right d)
    (save-restriction
      (widen)
      (buffer-substring-no-properties (point-min) (point-max)))))

(defun gemkit--resolve (d accepted)
  "Answer D: ACCEPTED non-nil sends the proposal's text, else a rejection."
  (unless (gemkit--diff-done d)
    (let ((path (gemkit--diff-path d))
          (content (and accepted (buffer-live-p (gemkit--diff-right d))
                        (gemkit--proposal-text d))))
      (gemkit--close-view d)
      (if accepted
          (progn
            (gemkit--send "diff/accepted" `((filePath . ,path) (content . ,content)))
            ;; Gemini CLI writes the file itself; show the new text once it has.
            (run-at-time 1 nil #'gemkit--revert path))
        (gemkit--send "diff/rejected" `((filePath . ,path)))))))

(defun gemkit--current-diff ()
  "The diff of the current buffer, else the only open one."
  (or (and gemkit--diff-path (gethash gemkit--diff-path gemkit--diffs))
      (let ((all (hash-table-values gemkit--diffs)))
        (cond ((= (length all) 1) (car all))
              ((null all) (user-error "gemkit: no diff is open"))
              (t (user-error "gemkit: several diffs are open: run the command in the diff you mean"))))))

(defun gemkit-accept ()
  "Accept the proposed change, with your edits of the proposal."
  (interactive)
  (gemkit--resolve (gemkit--current-diff) t))

(defun gemkit-reject ()
  "Reject the proposed change."
  (interactive)
  (gemkit--resolve (gemkit--current-diff) nil))

(defun gemkit-show-changes ()
  "Show the proposal as a unified diff against the file on disk."
  (interactive)
  (let ((d (gemkit--current-diff)))
    (diff-buffers (gemkit--diff-left d) (gemkit--diff-right d))))

;;; Protocol input

(defun gemkit--set-env (env on)
  "Set (ON non-nil) or unset the variables of ENV, an alist, for terminals."
  (dolist (kv env)
    (setenv (symbol-name (car kv)) (and on (cdr kv)))))

(defun gemkit--when-free (fn &optional tries)
  "Call FN once no minibuffer prompt is active (the layout changes then).
Try for up to 25 s (TRIES counts), so that gemkit still gets its answer
within its 30 s."
  (let ((tries (or tries 0)))
    (if (and (active-minibuffer-window) (< tries 250))
        (run-at-time 0.1 nil #'gemkit--when-free fn (1+ tries))
      (funcall fn))))

(defun gemkit--answer-open (id path content &optional agent)
  "Show CONTENT proposed for PATH by AGENT and answer gemkit's request ID."
  (condition-case err
      (progn (gemkit--open-diff path content agent)
             (gemkit--reply id (make-hash-table)))
    (error (gemkit--reply-error
            id -32000 (concat "cannot show the diff in Emacs: " (error-message-string err))))))

(defun gemkit--handle (msg)
  "Act on MSG, a message from gemkit, and answer it when it is a request."
  (let* ((id (alist-get 'id msg))
         (method (alist-get 'method msg))
         (params (alist-get 'params msg)))
    (pcase method
      ("server/ready"
       (setq gemkit--ready params
             gemkit--last nil
             gemkit--last-buffer nil)
       (gemkit--set-env (alist-get 'env params) t)
       (gemkit--update)
       (run-hooks 'gemkit-ready-hook))
      ("file/written"
       (let ((path (alist-get 'path params)))
         (when (stringp path) (gemkit--revert path))))
      ("diff/open"
       (let ((path (alist-get 'filePath params))
             (content (alist-get 'newContent params))
             (agent (alist-get 'agent params)))
         (if (not (and (stringp path) (stringp content)))
             (gemkit--reply-error id -32602 "diff/open needs filePath and newContent strings")
           (gemkit--when-free (lambda () (gemkit--answer-open id path content
                                                              (and (stringp agent) agent)))))))
      ("diff/close"
       (let ((d (gethash (alist-get 'filePath params) gemkit--diffs)))
         (if (not d)
             (gemkit--reply id '((content . :null)))
           (let ((content (gemkit--proposal-text d)))
             ;; No outcome for this view, even if closing it has to wait.
             (setf (gemkit--diff-done d) t)
             (remhash (gemkit--diff-path d) gemkit--diffs)
             (gemkit--reply id `((content . ,content)))
             (gemkit--when-free (lambda () (gemkit--close-view d)))))))
      ("diagnostics/get"
       (if (numberp (alist-get 'settle params))
           (gemkit-lsp-settled-diagnostics id params)
         (gemkit--reply id `((files . ,(gemkit--diagnostics (alist-get 'path params)))))))
      ;; The language clients lent to gemkit's code-intelligence tools:
      ;; gemkit-lsp.el.
      ((or "lsp/clients" "lsp/request" "lsp/changed" "lsp/unsaved")
       (gemkit-lsp-handle id method params))
      (_ (when id (gemkit--reply-error id -32601 (concat "Method not found: " method)))))))

;;; Diagnostics and mentions

(declare-function flymake-diagnostics "flymake")
(declare-function flymake-diagnostic-type "flymake")
(declare-function flymake-diagnostic-text "flymake")
(declare-function flymake-diagnostic-beg "flymake")
(declare-function flymake-diagnostic-end "flymake")
(declare-function flymake-diagnostic-backend "flymake")

(defun gemkit--position (pos)
  "The 1-based line and character of POS in the current buffer, as an alist."
  (save-excursion
    (goto-char pos)
    (gemkit--cursor)))

(defun gemkit--flymake-severity (type)
  "The protocol's severity of the Flymake diagnostic TYPE."
  (pcase type
    ((or :error 'eglot-error) "error")
    ((or :warning 'eglot-warning) "warning")
    ((or :note 'eglot-note) "info")
    (_ "info")))

(defun gemkit--buffer-diagnostics (buffer)
  "The Flymake diagnostics of BUFFER, a vector of alists."
  (with-current-buffer buffer
    (if (not (and (fboundp 'flymake-diagnostics) (bound-and-true-p flymake-mode)))
        []
      (vconcat
       (mapcar (lambda (d)
                 (let ((backend (flymake-diagnostic-backend d)))
                   `((message . ,(substring-no-properties (flymake-diagnostic-text d)))
                     (severity . ,(gemkit--flymake-severity (flymake-diagnostic-type d)))
                     ,@(when (and backend (symbolp backend)) `((source . ,(symbol-name backend))))
                     (range . ((start . ,(gemkit--position (flymake-diagnostic-beg d)))
                               (end . ,(gemkit--position (flymake-diagnostic-end d))))))))
               (flymake-diagnostics))))))

(defun gemkit--diagnostics (path)
  "Answer diagnostics/get: Flymake's diagnostics of PATH, or of every file."
  (vconcat
   (if (stringp path)
       (let ((buf (get-file-buffer path)))
         (list `((path . ,path) (diagnostics . ,(if buf (gemkit--buffer-diagnostics buf) [])))))
     (delq nil (mapcar (lambda (buf)
                         (let ((f (gemkit--file-of buf)))
                           (when f `((path . ,f) (diagnostics . ,(gemkit--buffer-diagnostics buf))))))
                       (buffer-list))))))

(defun gemkit-mention (&optional beg end)
  "@-mention the current file in Claude Code's prompt.
With an active region (BEG and END), mention its lines too."
  (interactive (when (region-active-p) (list (region-beginning) (region-end))))
  (let ((path (gemkit--file-of (current-buffer))))
    (cond
     ((not path) (message "gemkit: this buffer is not a file on disk"))
     (t
      (let ((params `((path . ,path))))
        (when (and beg end)
          (setq params (append params
                               `((lineStart . ,(line-number-at-pos beg t))
                                 (lineEnd . ,(line-number-at-pos (max beg (1- end)) t))))))
        (unless (gemkit--send "editor/mention" params)
          (message "gemkit is not running: M-x gemkit-start")))))))

(defun gemkit--handle-line (line)
  "Parse LINE from gemkit and handle it; errors go to the log."
  (let ((msg (condition-case nil
                 (json-parse-string line :object-type 'alist :null-object nil :false-object nil)
               (error (gemkit--log "unreadable line from gemkit: %.200s" line) nil))))
    (cond ((not (consp msg)))
          ((not (stringp (alist-get 'method msg)))
           (when-let ((e (alist-get 'error msg)))
             (gemkit--log "gemkit answered an error: %s" (alist-get 'message e))))
          (t (condition-case err
                 (gemkit--handle msg)
               (error
                (gemkit--log "handling %s: %s" (alist-get 'method msg) (error-message-string err))
                (when (alist-get 'id msg)
                  (gemkit--reply-error (alist-get 'id msg) -32603 (error-message-string err)))))))))

(defun gemkit--filter (_process string)
  "Handle each line of STRING, gemkit's output; keep a partial line."
  (let ((start 0) nl)
    (while (setq nl (string-search "\n" string start))
      (push (substring string start nl) gemkit--partial)
      (let ((line (apply #'concat (nreverse gemkit--partial))))
        (setq gemkit--partial nil
              start (1+ nl))
        (unless (string-empty-p line)
          (gemkit--handle-line line))))
    (when (< start (length string))
      (push (substring string start) gemkit--partial))))

(defun gemkit--sentinel (process event)
  "Clean up when PROCESS, gemkit, has ended as EVENT describes."
  (unless (process-live-p process)
    (let ((expected gemkit--stopping))
      (when gemkit--ready
        (gemkit--set-env (alist-get 'env gemkit--ready) nil))
      (setq gemkit--process nil
            gemkit--ready nil
            gemkit--stopping nil)
      (unless expected
        (message "gemkit stopped (%s); see M-x gemkit-log" (string-trim (format "%s" event))))
      (run-hooks 'gemkit-stopped-hook))))

;;; Start and stop

(defun gemkit--hooks (on)
  "Add (ON non-nil) or remove the hooks that report editor events."
  (let ((f (if on #'add-hook #'remove-hook)))
    (funcall f 'post-command-hook #'gemkit--update)
    (funcall f 'window-selection-change-functions #'gemkit--update)
    (funcall f 'window-buffer-change-functions #'gemkit--update)
    (funcall f 'after-save-hook #'gemkit--update)
    (funcall f 'kill-buffer-hook #'gemkit--on-kill-buffer)
    (funcall f 'kill-emacs-hook #'gemkit-stop)))

(defun gemkit-start ()
  "Start gemkit, the Gemini CLI companion, for this Emacs."
  (interactive)
  (unless (gemkit--live-p)
    (let ((program (executable-find gemkit-program))
          (args (list "ide" "serve" "--editor" "stdio"
                      "--ide-name" gemkit-ide-name
                      "--ide-display-name" gemkit-ide-display-name
                      "--ide-pid" (number-to-string (emacs-pid)))))
      (unless program
        (user-error "gemkit: cannot find `%s'; set `gemkit-program' to the gemkit binary" gemkit-program))
      (dolist (dir (or gemkit-workspace (list default-directory)))
        (setq args (append args (list "--workspace" (directory-file-name (expand-file-name dir))))))
      (setq gemkit--partial nil
            gemkit--stopping nil
            gemkit--last nil
            gemkit--last-buffer nil)
      (clrhash gemkit--tracked)
      (let ((log (get-buffer-create gemkit--log-buffer)))
        (setq gemkit--process
              (make-process :name "gemkit" :command (cons program (append args gemkit-args))
                            :connection-type 'pipe :noquery t :coding 'utf-8-unix
                            :filter #'gemkit--filter :sentinel #'gemkit--sentinel
                            :stderr log))
        (when-let ((errproc (get-buffer-process log)))
          (set-process-query-on-exit-flag errproc nil)))
      (gemkit--hooks t)
      (when (and gemkit-poll-interval (not gemkit--timer))
        (setq gemkit--timer (run-at-time gemkit-poll-interval gemkit-poll-interval #'gemkit--poll))))))

(defun gemkit-stop ()
  "Stop gemkit, which then removes its discovery file and exits."
  (interactive)
  (when gemkit--timer
    (cancel-timer gemkit--timer)
    (setq gemkit--timer nil))
  (gemkit--hooks nil)
  (when (gemkit--live-p)
    ;; Open views stay as inert buffers: a new gemkit would not know them.
    (maphash (lambda (_ d) (setf (gemkit--diff-done d) t)) gemkit--diffs)
    (clrhash gemkit--diffs)
    (let ((process gemkit--process)
          (deadline (+ (float-time) 2)))
      (setq gemkit--stopping t)
      (ignore-errors (process-send-eof process))
      ;; JUST-THIS-ONE: read gemkit's output only. Reading the terminal
      ;; here too would, when Emacs is being killed because its terminal
      ;; hung up, hit the dead terminal and start killing Emacs again
      ;; from inside `kill-emacs-hook', without end.
      (while (and (process-live-p process) (< (float-time) deadline))
        (accept-process-output process 0.05 nil t))
      (when (process-live-p process)
        (delete-process process)))))

(defun gemkit-set-workspace (directories)
  "Make DIRECTORIES (interactively, one directory) the workspace."
  (interactive (list (list (read-directory-name "Workspace folder: "))))
  (setq directories (mapcar (lambda (d) (directory-file-name (expand-file-name d))) directories))
  (when (gemkit--send "workspace/update" `((paths . ,(vconcat directories))))
    ;; Terminals started from now on name the new workspace too (Qwen
    ;; Code's variable when gemkit gave it).
    (let ((joined (string-join directories path-separator)))
      (setenv "GEMINI_CLI_IDE_WORKSPACE_PATH" joined)
      (when (assq 'QWEN_CODE_IDE_WORKSPACE_PATH (alist-get 'env gemkit--ready))
        (setenv "QWEN_CODE_IDE_WORKSPACE_PATH" joined)))))

(defun gemkit--endpoints ()
  "The endpoints gemkit serves, from server/ready, as alists.
An older gemkit lists none: then Gemini CLI's alone."
  (let ((endpoints (append (alist-get 'endpoints gemkit--ready) nil)))
    (or endpoints
        `(((agent . "Gemini CLI") (port . ,(alist-get 'port gemkit--ready))
           (file . ,(alist-get 'discoveryFile gemkit--ready)))))))

(defun gemkit-status ()
  "Say where gemkit serves: every agent's endpoint, and the open diffs."
  (interactive)
  (message "%s"
           (cond ((not (gemkit--live-p)) "gemkit is not running")
                 ((not gemkit--ready) "gemkit is starting")
                 (t (concat
                     (mapconcat (lambda (e)
                                  (let ((agent (alist-get 'agent e)))
                                    (format "gemkit serves %s on 127.0.0.1:%s (%s %s)"
                                            agent (alist-get 'port e)
                                            (if (equal agent "Gemini CLI") "discovery file" "lock file")
                                            (alist-get 'file e))))
                                (gemkit--endpoints) "\n")
                     (format "\nopen diffs: %s"
                             (if (zerop (hash-table-count gemkit--diffs))
                                 "none"
                               (string-join (hash-table-keys gemkit--diffs) ", "))))))))

(defun gemkit-log ()
  "Show gemkit's log."
  (interactive)
  (display-buffer (get-buffer-create gemkit--log-buffer)))

;;;###autoload
(define-minor-mode gemkit-mode
  "Make this Emacs a Gemini CLI IDE companion through gemkit."
  :global t
  :lighter " gemkit"
  (if gemkit-mode (gemkit-start) (gemkit-stop)))

(provide 'gemkit)
;;; gemkit.el ends here
