;;; gemkit-diff.el --- Mark the changes of a gemkit proposal  -*- lexical-binding: t; -*-

;;; Commentary:

;; Highlights, in the two buffers of a proposal (the file on disk and the
;; proposed text), the lines that differ, with diff-mode's faces: the
;; removed and changed lines of the file `diff-removed', the added and
;; changed lines of the proposal `diff-added', and within changed lines
;; the words that differ `diff-refine-removed' and `diff-refine-added'
;; (smerge's refinement, as diff-mode does: in the `gemkit-diff-refine'
;; hunks nearest the proposal's point, and in each hunk the change
;; commands go to).  The lines come from the diff program
;; (`diff-command'), as for `diff-buffers'; they are marked again a
;; moment after each edit of the proposal.  Each hunk is an
;; overlay in both buffers (an empty one on the side without lines),
;; each knowing the other: `gemkit-next-change' and
;; `gemkit-previous-change' move between them and show the other side.
;; gemkit.el loads it when a proposal opens.

;;; Code:

(require 'cl-lib)
(require 'diff)
(require 'diff-mode)

(declare-function gemkit--diff-left "gemkit")
(declare-function gemkit--diff-right "gemkit")
(declare-function gemkit--diff-done "gemkit")
(declare-function gemkit--diff-timer "gemkit")
(declare-function gemkit--diff-path "gemkit")
(declare-function gemkit--current-diff "gemkit")
(declare-function gemkit--log "gemkit")
(declare-function smerge-refine-regions "smerge-mode")
(defvar gemkit-diff-refresh-delay)
(defvar gemkit-diff-refine)

(defconst gemkit--hunk-header
  "^\\([0-9]+\\)\\(?:,\\([0-9]+\\)\\)?\\([acd]\\)\\([0-9]+\\)\\(?:,\\([0-9]+\\)\\)?$"
  "A hunk's line in the diff program's normal output, e.g. 3,4c3.")

(defconst gemkit--refine-max 8000
  "The most characters a side of a hunk whose changed words are marked.
A proposal that rewrites every line of a 256 KiB file (its line ends)
took smerge 30 s; one of 8000 characters a few tens of milliseconds.")

(defun gemkit--diff-hunks (left right)
  "The hunks that turn buffer LEFT into buffer RIGHT, in order.
Each is (OP L1 L2 R1 R2), as the diff program's normal output says
them: OP is ?a, ?c or ?d; lines count from 1, L2 and R2 included."
  (let ((file (make-temp-file "gemkit-diff"))
        (coding-system-for-write 'utf-8-emacs-unix)
        (coding-system-for-read 'utf-8-emacs-unix)
        (write-region-inhibit-fsync t)
        hunks)
    (unwind-protect
        (with-temp-buffer
          (let ((out (current-buffer))
                ;; A proposal for a remote file still runs diff here.
                (default-directory temporary-file-directory)
                status)
            (with-current-buffer left
              (write-region nil nil file nil 'silent))
            (with-current-buffer right
              ;; -a: a NUL byte does not make the text "binary".
              (setq status (call-process-region nil nil diff-command nil out nil "-a" file "-")))
            (unless (memq status '(0 1))
              (error "%s exited with %s: %s" diff-command status (string-trim (buffer-string))))
            (goto-char (point-min))
            (while (re-search-forward gemkit--hunk-header nil t)
              (let ((l1 (string-to-number (match-string 1)))
                    (l2 (and (match-beginning 2) (string-to-number (match-string 2))))
                    (r1 (string-to-number (match-string 4)))
                    (r2 (and (match-beginning 5) (string-to-number (match-string 5)))))
                (push (list (char-after (match-beginning 3)) l1 (or l2 l1) r1 (or r2 r1)) hunks)))))
      (delete-file file))
    (nreverse hunks)))

(defun gemkit--line-walker (buffer)
  "A function of a line number that returns its start in BUFFER.
The numbers asked must not decrease: it moves on from the last one."
  (let ((line 1) (pos (with-current-buffer buffer (point-min))))
    (lambda (n)
      (with-current-buffer buffer
        (save-excursion
          (goto-char pos)
          (forward-line (- n line))
          (setq line n pos (point)))))))

(defun gemkit--unmark (buffer)
  "Remove the change marks of BUFFER."
  (with-current-buffer buffer
    (save-restriction
      (widen)
      (dolist (ov (overlays-in (point-min) (point-max)))
        (when (overlay-get ov 'gemkit-change)
          (delete-overlay ov))))))

(defun gemkit--hunk-overlay (buffer beg end face)
  "Mark BEG..END of BUFFER as one side of a hunk, with FACE unless empty."
  (let ((ov (make-overlay beg end buffer t nil)))
    (overlay-put ov 'gemkit-change 'hunk)
    (when (< beg end)
      (overlay-put ov 'face face))
    ov))

(defun gemkit--fill (ov rows face)
  "Show ROWS empty rows in FACE after the lines of hunk overlay OV.
They stand for the other side's extra lines, as the filler lines of
Vim's diff mode do; they are display only, not text of the buffer."
  (when (> rows 0)
    (let* ((end (overlay-end ov))
           (bol (with-current-buffer (overlay-buffer ov)
                  (or (= end (point-min)) (eq (char-before end) ?\n))))
           (text (apply #'concat (make-list rows "\n"))))
      ;; At the end of a last line without a newline, the rows begin
      ;; with a line break and end without one.
      (overlay-put ov (if (= (overlay-start ov) end) 'before-string 'after-string)
                   (propertize (if bol text (concat "\n" (substring text 1)))
                               'face face)))))

(defun gemkit--refine (rov)
  "Mark the words that differ in the changed hunk of ROV, a proposal's hunk.
Do nothing for a hunk that adds or removes lines only, a hunk too big
\(`gemkit--refine-max') or one already refined."
  (let ((lov (overlay-get rov 'gemkit-other)))
    (when (and (overlay-buffer lov)
               (not (overlay-get rov 'gemkit-refined))
               (< 0 (- (overlay-end lov) (overlay-start lov)) (1+ gemkit--refine-max))
               (< 0 (- (overlay-end rov) (overlay-start rov)) (1+ gemkit--refine-max)))
      (require 'smerge-mode)
      (overlay-put rov 'gemkit-refined t)
      (with-current-buffer (overlay-buffer rov)
        (save-excursion
          (with-current-buffer (overlay-buffer lov)
            (save-excursion
              (smerge-refine-regions
               (copy-marker (overlay-start lov)) (overlay-end lov)
               (with-current-buffer (overlay-buffer rov) (copy-marker (overlay-start rov)))
               (overlay-end rov)
               nil nil
               '((gemkit-change . word) (priority . 1) (face . diff-refine-removed))
               '((gemkit-change . word) (priority . 1) (face . diff-refine-added))))))))))

(defun gemkit--mark (d)
  "Mark the hunks of D in both its buffers; return how many there are.
The changed words are marked in the `gemkit-diff-refine' hunks nearest
the proposal's point, where the person reads and edits."
  (let* ((left (gemkit--diff-left d))
         (right (gemkit--diff-right d))
         (hunks (gemkit--diff-hunks left right))
         (lpos (gemkit--line-walker left))
         (rpos (gemkit--line-walker right))
         (here (let ((w (get-buffer-window right)))
                 (if w (window-point w) (with-current-buffer right (point)))))
         changed)
    (gemkit--unmark left)
    (gemkit--unmark right)
    (pcase-dolist (`(,op ,l1 ,l2 ,r1 ,r2) hunks)
      ;; An ?a hunk adds after line L1 of the file, a ?d one removes the
      ;; lines that would follow line R1 of the proposal.
      (let* ((lbeg (funcall lpos (if (eq op ?a) (1+ l1) l1)))
             (lend (if (eq op ?a) lbeg (funcall lpos (1+ l2))))
             (rbeg (funcall rpos (if (eq op ?d) (1+ r1) r1)))
             (rend (if (eq op ?d) rbeg (funcall rpos (1+ r2))))
             (lov (gemkit--hunk-overlay left lbeg lend 'diff-removed))
             (rov (gemkit--hunk-overlay right rbeg rend 'diff-added))
             (ln (if (eq op ?a) 0 (- l2 l1 -1)))
             (rn (if (eq op ?d) 0 (- r2 r1 -1))))
        (overlay-put lov 'gemkit-other rov)
        (overlay-put rov 'gemkit-other lov)
        ;; Filler rows keep the lines after the hunk side by side.
        (if (< ln rn)
            (gemkit--fill lov (- rn ln) 'diff-added)
          (gemkit--fill rov (- ln rn) 'diff-removed))
        (when (eq op ?c) (push rov changed))))
    (let ((near (sort changed (lambda (a b)
                                (< (gemkit--distance a here) (gemkit--distance b here))))))
      (dotimes (_ (min gemkit-diff-refine (length near)))
        (gemkit--refine (pop near))))
    (length hunks)))

(defun gemkit--distance (ov pos)
  "How far POS is from overlay OV."
  (cond ((< pos (overlay-start ov)) (- (overlay-start ov) pos))
        ((> pos (overlay-end ov)) (- pos (overlay-end ov)))
        (t 0)))

(defun gemkit--highlight (d)
  "Mark the changes of D, if its view is still open; log a failure."
  (when (and (not (gemkit--diff-done d))
             (buffer-live-p (gemkit--diff-left d))
             (buffer-live-p (gemkit--diff-right d)))
    (condition-case err
        (gemkit--mark d)
      (error (gemkit--log "marking the changes of %s: %s"
                          (gemkit--diff-path d) (error-message-string err))))))

(defun gemkit--schedule-highlight (d)
  "Mark the changes of D again once its proposal has not changed for a moment."
  (let ((timer (gemkit--diff-timer d)))
    (when (timerp timer) (cancel-timer timer)))
  (setf (gemkit--diff-timer d)
        (run-at-time gemkit-diff-refresh-delay nil
                     (lambda ()
                       (setf (gemkit--diff-timer d) nil)
                       (gemkit--highlight d)))))

(defun gemkit--hunks-here ()
  "The hunk overlays of the current buffer, by position."
  (save-restriction
    (widen)
    (sort (cl-remove-if-not (lambda (ov) (eq (overlay-get ov 'gemkit-change) 'hunk))
                            (overlays-in (point-min) (point-max)))
          (lambda (a b) (< (overlay-start a) (overlay-start b))))))

(defun gemkit--go-to-change (forward)
  "Move to the next change (FORWARD non-nil) or the previous one."
  (let* ((d (gemkit--current-diff))     ; a user-error outside a proposal
         (all (gemkit--hunks-here))
         (ov (if forward
                 (cl-find-if (lambda (o) (> (overlay-start o) (point))) all)
               (cl-find-if (lambda (o) (< (overlay-start o) (point))) all :from-end t))))
    (unless ov
      (user-error (if all
                      (if forward "No next change" "No previous change")
                    "No changes")))
    (goto-char (overlay-start ov))
    (recenter)
    ;; Beyond the hunks refined near the point when it was marked.
    (gemkit--refine (if (eq (overlay-buffer ov) (gemkit--diff-right d))
                        ov
                      (overlay-get ov 'gemkit-other)))
    (let* ((other (overlay-get ov 'gemkit-other))
           (window (and (overlay-buffer other) (get-buffer-window (overlay-buffer other)))))
      (when window
        (with-selected-window window
          (goto-char (overlay-start other))
          (recenter))))
    (message "Change %d of %d" (1+ (cl-position ov all)) (length all))))

;;;###autoload
(defun gemkit-next-change ()
  "Go to the next change of the proposal, and the other side to its match."
  (interactive)
  (gemkit--go-to-change t))

;;;###autoload
(defun gemkit-previous-change ()
  "Go to the previous change of the proposal, and the other side to its match."
  (interactive)
  (gemkit--go-to-change nil))

(provide 'gemkit-diff)
;;; gemkit-diff.el ends here
